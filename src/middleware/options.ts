// The options of `apiKeyAuth()` (auth-options.ts), parsed with the Node client: createClient() over
// undici's keep-alive pool. The Web runtimes parse the same options with a client over fetch.

import type { IncomingMessage, ServerResponse } from "node:http";
import { createClient } from "../client/client";
import { parseAuthOptions, type ApiKeyAuthConfig, type ApiKeyAuthOptions } from "./auth-options";

export * from "./auth-options";

/** Parses the options of `apiKeyAuth()` once. */
export function parseOptions<Req extends IncomingMessage, Res extends ServerResponse>(
  input: ApiKeyAuthOptions<Req, Res> | undefined,
): ApiKeyAuthConfig<Req, Res> {
  return parseAuthOptions(input, createClient);
}
