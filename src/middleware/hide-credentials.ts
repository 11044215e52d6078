// Removes the headers that carried the API key from the request, so that later handlers, loggers
// and proxies never see it: both `req.headers` and the matching `req.rawHeaders` entries.

import type { IncomingMessage } from "node:http";

/** Deletes the named (lower-case) headers from `req.headers` and `req.rawHeaders`. */
export function removeHeaders(req: Pick<IncomingMessage, "headers" | "rawHeaders">, names: readonly string[]): void {
  if (names.length === 0) return;
  for (const name of names) delete req.headers[name];
  const raw = req.rawHeaders;
  if (!Array.isArray(raw)) return;
  const kept: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (!names.includes(raw[i]!.toLowerCase())) kept.push(raw[i]!, raw[i + 1]!);
  }
  raw.splice(0, raw.length, ...kept);
}
