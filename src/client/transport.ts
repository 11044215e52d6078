// How an attempt reaches the key service: one POST, then the answer's status, headers and size-capped
// body. Two implementations: undici's keep-alive pool (undici-transport.ts, the default) and a
// caller's `fetch` (fetch-transport.ts); createClient() picks one, createFetchClient() the second.

import type { BodyResult } from "./read-body";

/** An answer whose headers have arrived; its body is still to be read (or released). */
export interface TransportResponse {
  readonly status: number;
  /** The first value of a response header; `name` in lower case. */
  header(name: string): string | undefined;
  /**
   * Reads the body, at most `maxBytes` bytes (past that it is released unread: `tooLarge`).
   * Rejects when the connection breaks, and when `signal` aborts (with its reason).
   */
  readBody(maxBytes: number, signal: AbortSignal): Promise<BodyResult>;
}

export interface Transport {
  /**
   * undefined when the transport can send now; else a promise that settles once it can (undici
   * loaded), rejecting when it never will. A call waits for it before its first attempt's clock
   * starts, so loading the transport never counts against an attempt's timeout.
   */
  ready(): Promise<void> | undefined;
  /** Closes the transport's connections once the requests in flight have ended. Called once. */
  close(): Promise<void>;
  /**
   * POSTs `body` to `{baseUrl}/v2/{operation}` without following redirects; resolves once the
   * answer's headers arrive. Rejects when the service cannot be reached, and at once when `signal`
   * aborts.
   */
  post(operation: string, headers: Record<string, string>, body: string, signal: AbortSignal): Promise<TransportResponse>;
}
