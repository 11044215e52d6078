// NDJSON answers (`Accept: application/x-ndjson`): every item of an operation that can export
// them, one JSON document a line, written as the store yields them and as fast as the caller reads.
import { once } from "node:events";
import type { IncomingMessage, ServerResponse } from "node:http";

const NDJSON_TYPE = "application/x-ndjson; charset=utf-8";

/** Whether the caller asks for NDJSON (`Accept: application/x-ndjson`). */
export function wantsNdjson(req: IncomingMessage): boolean {
  const accept = req.headers.accept;
  if (!accept) return false;
  return accept.split(",").some((part) => part.split(";", 1)[0]!.trim().toLowerCase() === "application/x-ndjson");
}

/**
 * Sends the items as NDJSON. The first item is read before the status goes out, so a store that
 * cannot serve is answered as any failure; one failing later ends the connection (the caller sees
 * a cut answer, never a short one that looks complete).
 */
export async function sendNdjson(res: ServerResponse, requestId: string, items: AsyncIterable<unknown>): Promise<void> {
  const it = items[Symbol.asyncIterator]();
  let next = await it.next();
  res.statusCode = 200;
  res.setHeader("Content-Type", NDJSON_TYPE);
  res.setHeader("X-Request-Id", requestId);
  try {
    while (!next.done) {
      if (!res.write(`${JSON.stringify(next.value)}\n`)) await Promise.race([once(res, "drain"), once(res, "close")]);
      if (res.destroyed) return void (await it.return?.());
      next = await it.next();
    }
    res.end();
  } catch (err) {
    res.destroy(err instanceof Error ? err : new Error(String(err)));
  }
}
