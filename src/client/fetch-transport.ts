// The transport over a caller's `fetch` (option `fetch`). A fetch may ignore its abort signal: the
// call still ends at once, and a response it delivers late, or a body it stalls, is released.

import { raceAbort } from "./abort";
import { cancelQuietly, readBodyCapped } from "./read-body";
import type { Transport, TransportResponse } from "./transport";

export function fetchTransport(baseUrl: string, fetchImpl: typeof fetch): Transport {
  return {
    ready: () => undefined,
    // The caller's fetch (or the runtime's) owns its connections.
    close: () => Promise.resolve(),
    async post(operation, headers, body, signal): Promise<TransportResponse> {
      const request = fetchImpl(`${baseUrl}/v2/${operation}`, { method: "POST", headers, body, redirect: "manual", signal });
      const response = await raceAbort(request, signal, (late) => cancelQuietly(late.body));
      return {
        status: response.status,
        header: (name) => response.headers.get(name) ?? undefined,
        readBody: (maxBytes, readSignal) => readBodyCapped(response, maxBytes, readSignal),
      };
    },
  };
}
