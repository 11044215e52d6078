// A secret-scanning report's body, read once its signature held: a JSON array of found tokens
// `[{ token, type, url, source }]`. What is wrong is said by entry and field, never by quoting a
// token. The host may add fields: unknown ones are ignored.

/** Most entries one report may hold (a larger one is refused with 413: the host sends it in parts). */
const REPORT_ENTRIES_LIMIT = 1000;
/** Largest report body, in bytes. */
export const REPORT_BYTES_LIMIT = 1024 * 1024;

const TOKEN_LIMIT = 4096;
const TYPE_LIMIT = 256;
const URL_LIMIT = 4096;
const SOURCE_LIMIT = 64;

/** One found token, as reported. */
export interface ReportedToken {
  token: string;
  type: string;
  url: string;
  source: string;
}

/** A report that cannot be read: `tooMany` for more entries than allowed (413), else malformed (400). */
export class ReportError extends Error {
  override readonly name = "ReportError";
  constructor(
    message: string,
    readonly tooMany = false,
  ) {
    super(message);
  }
}

/** Text a store can keep: no NUL, no lone UTF-16 surrogate (the same rule as every request body). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const storable = (s: string): boolean => !s.includes("\0") && !LONE_SURROGATE.test(s);

function text(entry: Record<string, unknown>, i: number, field: string, limit: number, fallback?: string): string {
  const value = entry[field] ?? fallback;
  if (typeof value !== "string") throw new ReportError(`entry ${i} has no "${field}" string.`);
  if (value.length > limit) throw new ReportError(`entry ${i}: "${field}" is longer than ${limit} characters.`);
  if (!storable(value)) throw new ReportError(`entry ${i}: "${field}" holds a NUL or a lone surrogate.`);
  return value;
}

/** The entries of a report's raw body. Throws `ReportError`. */
export function parseReport(body: Buffer): ReportedToken[] {
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString("utf8"));
  } catch {
    throw new ReportError("the body is not JSON.");
  }
  if (!Array.isArray(doc)) throw new ReportError("the body is not a JSON array of found tokens.");
  if (doc.length > REPORT_ENTRIES_LIMIT) throw new ReportError(`it holds more than ${REPORT_ENTRIES_LIMIT} entries.`, true);
  return doc.map((entry: unknown, i) => {
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) throw new ReportError(`entry ${i} is not an object.`);
    const e = entry as Record<string, unknown>;
    const token = text(e, i, "token", TOKEN_LIMIT);
    if (token === "") throw new ReportError(`entry ${i} has an empty "token".`);
    return {
      token,
      type: text(e, i, "type", TYPE_LIMIT),
      url: text(e, i, "url", URL_LIMIT, ""),
      source: text(e, i, "source", SOURCE_LIMIT, "unknown"),
    };
  });
}
