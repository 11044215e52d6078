// Keeping secrets (the root key, a caller's key) out of what the client throws and logs: redaction
// of text from outside, secret-free copies of fetch errors, and request ids checked before use.

/** Replaces every occurrence of a secret in text from outside (a server's answer, a fetch error). */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  // includes() first: the common case (no secret in the text) allocates nothing.
  for (const secret of secrets) if (secret !== "" && out.includes(secret)) out = out.split(secret).join("[redacted]");
  return out;
}

// What the service's request ids look like (`req_…`); anything else is not passed on.
const REQUEST_ID = /^[A-Za-z0-9_-]{1,128}$/;
/** Stands for a request id the service sent but the client will not pass on. */
const UNKNOWN_REQUEST_ID = "unknown";

/**
 * A request id safe to put in errors, logs and results: `id` itself when it looks like one and
 * holds no secret; `"unknown"` for anything else; undefined when there was none.
 */
export function safeRequestId(id: unknown, secrets: readonly string[]): string | undefined {
  if (typeof id !== "string" || id === "") return undefined;
  if (!REQUEST_ID.test(id) || redact(id, secrets) !== id) return UNKNOWN_REQUEST_ID;
  return id;
}

/** A short, secret-free description of a fetch failure: the system error code when there is one. */
export function describeCause(cause: unknown, secrets: readonly string[]): string {
  const inner = (cause as { cause?: unknown } | undefined)?.cause ?? cause;
  const code = (inner as { code?: unknown } | undefined)?.code;
  if (typeof code === "string" && /^[A-Z0-9_]{2,60}$/.test(code)) return tlsProblem(code) ?? code;
  const message = inner instanceof Error ? inner.message : String(inner);
  return redact(message, secrets).slice(0, 200);
}

/** A TLS failure's code in words, with what to do; undefined for any other code. */
function tlsProblem(code: string): string | undefined {
  if (
    /^(UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|UNABLE_TO_GET_ISSUER_CERT(_LOCALLY)?)$/.test(
      code,
    )
  ) {
    return `its TLS certificate is not signed by a trusted CA (${code}): pass the CA that signed it as tls: { ca }`;
  }
  if (code === "CERT_HAS_EXPIRED" || code === "CERT_NOT_YET_VALID") return `its TLS certificate is not valid now (${code})`;
  if (code === "ERR_TLS_CERT_ALTNAME_INVALID") return `its TLS certificate is for another host name (${code})`;
  if (/^ERR_SSL_.*ALERT_(CERTIFICATE_REQUIRED|HANDSHAKE_FAILURE|UNKNOWN_CA|BAD_CERTIFICATE)$/.test(code)) {
    return `it refused the TLS handshake, asking for a client certificate it trusts (${code}): pass tls: { cert, key }`;
  }
  return undefined;
}

const MAX_CAUSE_DEPTH = 3;
const MAX_CAUSE_TEXT = 500;

/**
 * The cause to keep on an error: never the original (a fetch error may carry the request, headers
 * and all, in any property), but a fresh Error with only its `name`, redacted `message`, `code`,
 * `errno` and `syscall`, and the same for its own `cause`, a few levels deep.
 */
export function safeCause(cause: unknown, secrets: readonly string[], depth = 0): Error {
  const source = (typeof cause === "object" && cause !== null ? cause : {}) as Record<string, unknown>;
  const text = (v: unknown) => redact(String(v), secrets).slice(0, MAX_CAUSE_TEXT);
  const message = text(
    cause instanceof Error ? cause.message : typeof cause === "object" && cause !== null ? (source.message ?? "") : cause,
  );
  const name = typeof source.name === "string" ? text(source.name) : "Error";
  const inner = depth < MAX_CAUSE_DEPTH && source.cause !== undefined ? safeCause(source.cause, secrets, depth + 1) : undefined;
  const copy = new Error(message, inner === undefined ? undefined : { cause: inner });
  Object.defineProperty(copy, "name", { value: name, enumerable: false, writable: true, configurable: true });
  copy.stack = `${name}: ${message}`;
  if (typeof source.code === "string") Object.assign(copy, { code: text(source.code) });
  if (typeof source.code === "number") Object.assign(copy, { code: source.code });
  if (typeof source.errno === "number") Object.assign(copy, { errno: source.errno });
  if (typeof source.syscall === "string") Object.assign(copy, { syscall: text(source.syscall) });
  return copy;
}
