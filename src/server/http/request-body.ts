// Reading a request body as JSON on node:http: the content-type check, the size limit (counted
// after decompression), gzip/deflate/br bodies, UTF-8 only, and a JSON object or array at the top
// (a scalar is refused as invalid JSON). Every failure is a ServiceError for the envelope.
import type { IncomingMessage } from "node:http";
import type { Readable } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import { ServiceError } from "../errors";

/** Largest request body accepted, in bytes (after decompression). */
const BODY_LIMIT_BYTES = 1024 * 1024;
const BODY_LIMIT_TEXT = "1mb";

/** Whether the request carries a body at all (chunked, or a positive Content-Length). */
export function hasBody(req: IncomingMessage): boolean {
  return req.headers["transfer-encoding"] !== undefined || Number(req.headers["content-length"] ?? 0) > 0;
}

/** `application/json` or any `<type>/<subtype>+json`, parameters ignored. */
export function isJsonContentType(header: string | undefined): boolean {
  if (!header) return false;
  if (header === "application/json") return true;
  const semi = header.indexOf(";");
  const type = (semi === -1 ? header : header.slice(0, semi)).trim().toLowerCase();
  if (type === "application/json") return true;
  const slash = type.indexOf("/");
  return slash > 0 && slash === type.lastIndexOf("/") && type.endsWith("+json") && type.length > slash + 6;
}

function invalid(message: string): ServiceError {
  return new ServiceError("application.invalid_input", message, {
    errors: [{ location: "body", message, fix: "Send a JSON object encoded as UTF-8." }],
  });
}

const unreadable = (): ServiceError => invalid("The request body could not be read.");
const notJson = (): ServiceError => invalid("The request body is not valid JSON.");
const tooLarge = (): ServiceError =>
  new ServiceError("bad_request.request_body_too_large", `The request body exceeds the limit of ${BODY_LIMIT_TEXT}.`);

/**
 * Text no store can keep is refused in every string and property name, the same on every store:
 * the NUL character (U+0000), which PostgreSQL text cannot hold, and a lone UTF-16 surrogate
 * (`"\ud800"` is valid JSON, but no UTF-8 text holds it: PostgreSQL refuses it, SQLite would
 * keep a replacement character instead).
 */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const UNSTORABLE = {
  nul: {
    found: (s: string) => s.includes("\0"),
    what: "the NUL character (U+0000)",
    fix: "Remove the NUL character (\\u0000) from the value.",
  },
  surrogate: {
    found: (s: string) => LONE_SURROGATE.test(s),
    what: "a lone UTF-16 surrogate (\\ud800-\\udfff without its pair)",
    fix: "Send well-formed Unicode text: each surrogate escape as half of a pair, or the character itself in UTF-8.",
  },
} as const;
type Unstorable = keyof typeof UNSTORABLE;

const unstorableRefused = (found: { path: string; kind: Unstorable }): ServiceError => {
  // A deeply nested body has a long path: its start is enough to find the place.
  const path = found.path.length > 200 ? `${found.path.slice(0, 200)}…` : found.path;
  const { what, fix } = UNSTORABLE[found.kind];
  const message = `Invalid request body: ${path} contains ${what}, which is not accepted.`;
  return new ServiceError("application.invalid_input", message, { errors: [{ location: path, message, fix }] });
};

/**
 * Where the first unstorable text (of the kinds asked for) is in `value` (a string, or an object's
 * property name or value), as a path like `body.meta.name`. Iterative, and a path is spelled out only
 * for the value found: a body may nest deeper than the call stack, and its paths would grow with the
 * square of the depth.
 */
function unstorablePath(value: unknown, root: string, kinds: readonly Unstorable[]): { path: string; kind: Unstorable } | undefined {
  const kindOf = (s: string): Unstorable | undefined => kinds.find((k) => UNSTORABLE[k].found(s));
  // Every value visited, as its parent's index and its own segment (".name" or "[i]").
  const parents: number[] = [-1];
  const segments: string[] = [root];
  const pathOf = (node: number, suffix = ""): string => {
    const parts: string[] = [suffix];
    for (let n = node; n !== -1; n = parents[n]!) parts.push(segments[n]!);
    return parts.reverse().join("");
  };
  const pending: Array<[unknown, number]> = [[value, 0]];
  while (pending.length > 0) {
    const [item, node] = pending.pop()!;
    if (typeof item === "string") {
      const kind = kindOf(item);
      if (kind) return { path: pathOf(node), kind };
      continue;
    }
    if (typeof item !== "object" || item === null) continue;
    const children: Array<[string, unknown]> = Array.isArray(item) ? item.map((v, i) => [`[${i}]`, v]) : [];
    if (!Array.isArray(item)) {
      for (const [name, child] of Object.entries(item)) {
        const kind = kindOf(name);
        if (kind) return { path: pathOf(node, " (a property name)"), kind };
        children.push([`.${name}`, child]);
      }
    }
    for (let i = children.length - 1; i >= 0; i--) {
      parents.push(node);
      segments.push(children[i]![0]);
      pending.push([children[i]![1], parents.length - 1]);
    }
  }
  return undefined;
}

/** Which unstorable kinds the JSON text may hold: both can only arrive escaped (`\u0000`, `\ud800`). */
function suspectedKinds(text: string): Unstorable[] {
  const kinds: Unstorable[] = [];
  if (text.includes("\\u0000")) kinds.push("nul");
  if (/\\u[dD][89a-fA-F]/.test(text)) kinds.push("surrogate");
  return kinds;
}

function charsetOk(contentType: string): boolean {
  if (contentType === "application/json") return true;
  const match = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType);
  return !match || /^utf-?8$/i.test(match[1]!);
}

function decoded(req: IncomingMessage): Readable | undefined {
  const header = req.headers["content-encoding"];
  if (header === undefined) return req;
  const encoding = header.trim().toLowerCase();
  if (encoding === "identity") return req;
  const decoder =
    encoding === "gzip"
      ? createGunzip()
      : encoding === "deflate"
        ? createInflate()
        : encoding === "br"
          ? createBrotliDecompress()
          : undefined;
  if (!decoder) return undefined;
  req.pipe(decoder);
  return decoder;
}

/** The first character that is not JSON whitespace (space, tab, LF, CR), if any. */
function firstNonBlank(text: string): string | undefined {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return text[i];
  }
  return undefined;
}

/**
 * Reads the body and parses it. Resolves `{}` for an empty body. When it rejects, the rest of
 * the body is drained (not buffered) so the answer can still be sent.
 */
export function readJsonBody(req: IncomingMessage): Promise<unknown> {
  const contentType = req.headers["content-type"] ?? "";
  const declared = Number(req.headers["content-length"] ?? 0);
  return new Promise((resolve, reject) => {
    const fail = (err: ServiceError): void => {
      req.unpipe();
      req.resume();
      reject(err);
    };
    if (!charsetOk(contentType)) return fail(unreadable());
    if (declared > BODY_LIMIT_BYTES) return fail(tooLarge());
    const source = decoded(req);
    if (!source) return fail(unreadable());
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    source.on("data", (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > BODY_LIMIT_BYTES) {
        done = true;
        if (source !== req) source.destroy();
        return fail(tooLarge());
      }
      chunks.push(chunk);
    });
    source.on("error", () => {
      if (done) return;
      done = true;
      fail(unreadable());
    });
    source.on("end", () => {
      if (done) return;
      done = true;
      let text = (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)).toString("utf8");
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      const first = firstNonBlank(text);
      if (first === undefined) return resolve({});
      if (first !== "{" && first !== "[") return reject(notJson());
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        return reject(notJson());
      }
      // The walk runs only when the text holds an escape that can spell unstorable text.
      let unstorable: { path: string; kind: Unstorable } | undefined;
      try {
        const kinds = suspectedKinds(text);
        unstorable = kinds.length > 0 ? unstorablePath(body, "body", kinds) : undefined;
      } catch {
        // Nothing here may escape: this runs in a stream's event handler.
        return reject(notJson());
      }
      if (unstorable !== undefined) return reject(unstorableRefused(unstorable));
      resolve(body);
    });
  });
}
