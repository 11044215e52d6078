// The key-service client of an `apiKeyAuth()`: the caller's prebuilt one, or one built once from
// `rootKey`/`baseUrl` (or the environment) with the middleware's short time limits.

import { createClient, type KeyServiceClient, type RetryOptions } from "../client";
import type { Logger } from "../logger";
import { fail, show } from "./option-checks";

export interface ClientSource {
  rootKey?: string;
  baseUrl?: string;
  client?: KeyServiceClient;
}

export function buildClient(
  options: ClientSource,
  logger: Logger,
  call: { readonly timeout: number; readonly deadline: number; readonly retry: RetryOptions | false },
): KeyServiceClient {
  if (options.client !== undefined) {
    if (typeof options.client !== "object" || options.client === null || typeof options.client.keys?.verifyKey !== "function") {
      return fail("client", `client is ${show(options.client)}; pass createClient() from "keyguard/client".`);
    }
    if (options.rootKey !== undefined || options.baseUrl !== undefined) {
      return fail("client", "pass either client or rootKey/baseUrl, not both; the client already holds them.");
    }
    return options.client;
  }
  const rootKey = options.rootKey ?? process.env.UNKEY_ROOT_KEY;
  if (typeof rootKey !== "string" || rootKey.trim() === "") {
    return fail("rootKey", "no root key. Set UNKEY_ROOT_KEY or pass { rootKey } (or a prebuilt { client }).");
  }
  try {
    // Failures are logged by the middleware, throttled; the client's per-call warnings go to debug.
    const clientLogger: Logger = {
      debug: (fields, message) => logger.debug?.(fields, message),
      warn: (fields, message) => logger.debug?.(fields, message),
      error: (fields, message) => logger.error(fields, message),
    };
    return createClient({ rootKey, baseUrl: options.baseUrl, logger: clientLogger, ...call });
  } catch (e) {
    const option = typeof (e as { option?: unknown }).option === "string" ? (e as { option: string }).option : "baseUrl";
    return fail(option, (e as Error).message);
  }
}
