// createClient: the client over the transport its options ask for (undici's keep-alive pool, or
// the caller's `fetch`). The client's shape and namespaces are assembled in assemble.ts.

import { assembleClient, type KeyServiceClient } from "./assemble";
import { fetchTransport } from "./fetch-transport";
import { parseClientOptions, type ClientConfig, type ClientOptions } from "./options";
import type { RequestContext } from "./request";
import { defaultRuntime } from "./runtime";
import type { Transport } from "./transport";
import { undiciTransport } from "./undici-transport";

/**
 * Creates a client for the key service. Reads `UNKEY_ROOT_KEY` / `UNKEY_BASE_URL` when the options
 * do not give them; throws KeyServiceConfigError on misconfiguration.
 */
export function createClient(options?: ClientOptions): KeyServiceClient {
  return buildClient({ config: parseClientOptions(options), runtime: defaultRuntime });
}

/**
 * Builds the client over a parsed config and a runtime (tests pass a deterministic runtime), with
 * the transport the config asks for unless one is given.
 */
export function buildClient(context: Omit<RequestContext, "transport"> & { transport?: Transport }): KeyServiceClient {
  return assembleClient({ ...context, transport: context.transport ?? createTransport(context.config) });
}

/** The caller's `fetch` when configured, else undici's `request()` on a keep-alive pool. */
function createTransport(config: ClientConfig): Transport {
  return config.fetch === undefined ? undiciTransport(config.baseUrl, config.tls) : fetchTransport(config.baseUrl, config.fetch);
}
