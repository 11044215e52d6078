// Reads a response body as text with a size cap, so a hostile or broken server cannot make the
// client buffer an unbounded body. Stops (and cancels the stream) as soon as the cap is passed.

export type BodyResult = { tooLarge: false; text: string } | { tooLarge: true };

/** Reads `response`'s body, at most `maxBytes` bytes. Read errors (reset, abort) propagate. */
export async function readBodyCapped(response: Response, maxBytes: number): Promise<BodyResult> {
  const declared = Number(response.headers.get("content-length"));
  if (Number.isFinite(declared) && declared > maxBytes) {
    await cancelQuietly(response.body);
    return { tooLarge: true };
  }
  const stream = response.body;
  if (stream === null) return { tooLarge: false, text: "" };
  const reader = stream.getReader();
  const decoder = new TextDecoder("utf-8");
  let total = 0;
  let text = "";
  // Bounded: every read counts at least one byte (empty chunks too) against the cap.
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += Math.max(1, value?.byteLength ?? 0);
    if (total > maxBytes) {
      await reader.cancel().catch(() => undefined);
      return { tooLarge: true };
    }
    if (value !== undefined) text += decoder.decode(value, { stream: true });
  }
  return { tooLarge: false, text: text + decoder.decode() };
}

/** Drops a body we will not read, so the connection can be released. */
export async function cancelQuietly(body: ReadableStream<Uint8Array> | null): Promise<void> {
  if (body === null) return;
  try {
    await body.cancel();
  } catch {
    // already closed or errored: nothing to release
  }
}
