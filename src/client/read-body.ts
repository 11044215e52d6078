// Reads a response body as text with a size cap, so a hostile or broken server cannot make the
// client buffer an unbounded body. Stops (and cancels the stream) past the cap or on abort.

export type BodyResult = { tooLarge: false; text: string } | { tooLarge: true };

/**
 * Reads `response`'s body, at most `maxBytes` bytes. Read errors (reset) propagate; when `signal`
 * aborts, the stream is cancelled (even if the fetch that made it ignores signals) and the read
 * rejects with `signal.reason`.
 */
export async function readBodyCapped(response: Response, maxBytes: number, signal?: AbortSignal): Promise<BodyResult> {
  if (signal?.aborted) {
    cancelQuietly(response.body);
    throw signal.reason;
  }
  const declared = Number(response.headers.get("content-length"));
  if (Number.isFinite(declared) && declared > maxBytes) {
    cancelQuietly(response.body);
    return { tooLarge: true };
  }
  const stream = response.body;
  if (stream === null) return { tooLarge: false, text: "" };
  const reader = stream.getReader();
  // Cancelling through the reader (the stream is locked to it) ends a pending read at once.
  const onAbort = () => void reader.cancel(signal?.reason).catch(() => undefined);
  signal?.addEventListener("abort", onAbort, { once: true });
  const decoder = new TextDecoder("utf-8");
  let total = 0;
  let text = "";
  try {
    // Bounded: every read counts at least one byte (empty chunks too) against the cap.
    for (;;) {
      const { done, value } = await reader.read();
      signal?.throwIfAborted();
      if (done) break;
      total += Math.max(1, value?.byteLength ?? 0);
      if (total > maxBytes) {
        void reader.cancel().catch(() => undefined);
        return { tooLarge: true };
      }
      if (value !== undefined) text += decoder.decode(value, { stream: true });
    }
  } finally {
    signal?.removeEventListener("abort", onAbort);
  }
  return { tooLarge: false, text: text + decoder.decode() };
}

/**
 * Drops a body we will not read, so the connection can be released. Does not wait for the
 * stream's source to acknowledge (a custom fetch's stream might never do so).
 */
export function cancelQuietly(body: ReadableStream<Uint8Array> | null): void {
  if (body === null || body.locked) return;
  body.cancel().catch(() => undefined);
}
