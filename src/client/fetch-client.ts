// A client that reaches the key service with `fetch` (the caller's, else the runtime's global): for
// runtimes without undici (Bun, Deno, Cloudflare Workers, edge runtimes). Loads no node: module.

import { assembleClient, type KeyServiceClient } from "./assemble";
import { fetchTransport } from "./fetch-transport";
import { parseClientOptions, type ClientOptions } from "./options";
import { defaultRuntime } from "./runtime";

/** `createClient()` over `fetch`: the same options, the same checks and answers. */
export function createFetchClient(options?: ClientOptions): KeyServiceClient {
  // The runtime's fetch makes its own connections: `tls` is refused as with a caller's fetch.
  const config = parseClientOptions(options, undefined, true);
  // The global is looked up per call, so a fetch installed later (or stubbed in tests) is used.
  const fetchImpl: typeof fetch = config.fetch ?? ((...args: Parameters<typeof fetch>) => fetch(...args));
  return assembleClient({ config, runtime: defaultRuntime, transport: fetchTransport(config.baseUrl, fetchImpl) });
}
