// Reading a request body as JSON on node:http: the content-type check, the size limit (counted
// after decompression), gzip/deflate/br bodies, UTF-8 only, and a JSON object or array at the top
// (a scalar is refused as invalid JSON). Every failure is a ServiceError for the envelope.
import type { IncomingMessage } from "node:http";
import type { Readable } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import { ServiceError } from "./envelope";

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
 * The NUL character (U+0000) is refused in every string and property name: PostgreSQL cannot store
 * it, and the service behaves the same on every store.
 */
const nulRefused = (path: string): ServiceError => {
  const message = `Invalid request body: ${path} contains the NUL character (U+0000), which is not accepted.`;
  return new ServiceError("application.invalid_input", message, {
    errors: [{ location: path, message, fix: "Remove the NUL character (\\u0000) from the value." }],
  });
};

/** Where the first NUL character is in `value` (a string, or an object's property name or value), as a path like `body.meta.name`. */
function nulPath(value: unknown, path: string): string | undefined {
  if (typeof value === "string") return value.includes("\0") ? path : undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = nulPath(value[i], `${path}[${i}]`);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  for (const [name, item] of Object.entries(value)) {
    if (name.includes("\0")) return `${path} (a property name)`;
    const found = nulPath(item, `${path}.${name}`);
    if (found !== undefined) return found;
  }
  return undefined;
}

function charsetOk(contentType: string): boolean {
  const match = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType);
  return !match || /^utf-?8$/i.test(match[1]!);
}

function decoded(req: IncomingMessage): Readable | undefined {
  const encoding = (req.headers["content-encoding"] ?? "identity").trim().toLowerCase();
  if (encoding === "identity") return req;
  const decoder = encoding === "gzip" ? createGunzip() : encoding === "deflate" ? createInflate() : encoding === "br" ? createBrotliDecompress() : undefined;
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
      // A NUL can only arrive escaped; the walk runs only when the text holds that escape.
      const nul = text.includes("\\u0000") ? nulPath(body, "body") : undefined;
      if (nul !== undefined) return reject(nulRefused(nul));
      resolve(body);
    });
  });
}
