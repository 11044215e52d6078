// A small real HTTP server on 127.0.0.1:0 for the client's tests: records every request and
// answers through a handler that can inject faults (statuses, bad bodies, hangs, resets).

import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { silentLogger, type Logger } from "../../../src/logger";
import { parseClientOptions, type ClientOptions } from "../../../src/client/options";
import { buildClient } from "../../../src/client/client";
import type { Runtime } from "../../../src/client/runtime";

export interface Recorded {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: unknown;
}

/** `n` is the 1-based number of the request. */
export type Handler = (req: Recorded, res: ServerResponse, n: number) => void | Promise<void>;

export interface TestServer {
  url: string;
  requests: Recorded[];
  close(): Promise<void>;
}

export async function startServer(handler: Handler): Promise<TestServer> {
  const requests: Recorded[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      let body: unknown = raw;
      try {
        body = JSON.parse(raw);
      } catch {
        // keep the raw text
      }
      const rec = { method: req.method ?? "", url: req.url ?? "", headers: req.headers, body };
      requests.push(rec);
      void Promise.resolve(handler(rec, res, requests.length)).catch(() => res.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  res.writeHead(status, { "Content-Type": "application/json", ...headers });
  res.end(text);
}

export function ok(res: ServerResponse, data: unknown, extra: Record<string, unknown> = {}): void {
  sendJson(res, 200, { meta: { requestId: "req_test" }, data, ...extra });
}

/** An error envelope like the service's, for `err:<vendor>:<category>:<name>`. */
export function fail(
  res: ServerResponse,
  status: number,
  identifier: string,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): void {
  const [, vendor, category, name] = identifier.split(":");
  sendJson(
    res,
    status,
    {
      meta: { requestId: "req_err" },
      error: {
        title: extra.title ?? "Error",
        detail: extra.detail ?? `${category}.${name}`,
        status,
        type: `https://unkey.com/docs/api-reference/errors-v2/${vendor}/${category}/${name}`,
        ...(extra.errors !== undefined && { errors: extra.errors }),
      },
    },
    headers,
  );
}

/** A runtime whose sleeps are recorded and advance a virtual clock instantly; random is fixed. */
export function fakeRuntime(random = 0.5): Runtime & { sleeps: number[]; clock: { t: number } } {
  const clock = { t: 0 };
  const sleeps: number[] = [];
  return {
    clock,
    sleeps,
    now: () => clock.t,
    random: () => random,
    sleep: async (ms: number, signal?: AbortSignal) => {
      signal?.throwIfAborted();
      sleeps.push(ms);
      clock.t += ms;
    },
  };
}

export interface RecordingLogger extends Logger {
  calls: Array<{ level: string; fields: Record<string, unknown>; message: string }>;
}

export function recordingLogger(): RecordingLogger {
  const calls: RecordingLogger["calls"] = [];
  const at = (level: string) => (fields: Record<string, unknown>, message: string) => void calls.push({ level, fields, message });
  return { calls, debug: at("debug"), warn: at("warn"), error: at("error") };
}

export const ROOT_KEY = "unkey_rootSECRETrootSECRET123";

let transport: Pick<ClientOptions, "fetch"> = {};

/** Makes `testClient` use the `fetch` option's transport (a suite run again through it). */
export function useFetchTransport(fetchImpl: typeof fetch = globalThis.fetch): void {
  transport = { fetch: fetchImpl };
}

/** A client over a deterministic runtime (recorded sleeps, fixed random). */
export function testClient(options: ClientOptions, runtime: Runtime = fakeRuntime()) {
  const config = parseClientOptions({ rootKey: ROOT_KEY, logger: silentLogger, ...transport, ...options }, {});
  return buildClient({ config, runtime });
}
