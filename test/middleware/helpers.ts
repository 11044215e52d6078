// Shared fixtures for the middleware tests: a real local key service, a client for it, keys made
// over the wire, a recording logger, apps for Express 4 and 5, and a stub service for faults.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import express5 from "express";
import express4 from "express4";
import { createClient, type KeyServiceClient } from "keyguard/client";
import type { LocalKeyServiceOptions, RunningLocalKeyService } from "keyguard/server";
import { startLocalUnderTest } from "../support/store-under-test";
import { silentLogger, type Logger, type LogFields } from "keyguard";
import type { CreateKeyInput } from "keyguard/client";
import { GENEROUS } from "../support/time-limits";

export const EXPRESS_VERSIONS = [
  { name: "express 5", express: express5 },
  { name: "express 4", express: express4 },
] as const;

export interface ServiceFixture {
  svc: RunningLocalKeyService;
  client: KeyServiceClient;
  /** Creates a key in the bootstrap API over the wire and returns the full key. */
  createKey(input?: Partial<CreateKeyInput>): Promise<string>;
  /** The same, returning the key and its id. */
  createKeyWithId(input?: Partial<CreateKeyInput>): Promise<{ key: string; keyId: string }>;
  close(): Promise<void>;
}

export async function startService(options: LocalKeyServiceOptions = {}): Promise<ServiceFixture> {
  const svc = await startLocalUnderTest({ logger: silentLogger, ...options });
  const client = createClient({ rootKey: svc.rootKey, baseUrl: svc.baseUrl, logger: silentLogger, retry: false, ...GENEROUS });
  return {
    svc,
    client,
    async createKey(input = {}) {
      const created = await client.keys.createKey({ apiId: svc.apiId, ...input } as CreateKeyInput);
      return created.key;
    },
    async createKeyWithId(input = {}) {
      const created = await client.keys.createKey({ apiId: svc.apiId, ...input } as CreateKeyInput);
      return { key: created.key, keyId: created.keyId };
    },
    close: () => svc.close(),
  };
}

export interface LogEntry {
  level: "warn" | "error";
  fields: LogFields;
  message: string;
}

export function recordingLogger(): Logger & { entries: LogEntry[] } {
  const entries: LogEntry[] = [];
  return {
    entries,
    warn: (fields, message) => entries.push({ level: "warn", fields, message }),
    error: (fields, message) => entries.push({ level: "error", fields, message }),
  };
}

/** A client whose fetch counts the calls it makes (to the real service). */
export function countingClient(svc: RunningLocalKeyService, options: Parameters<typeof createClient>[0] = {}) {
  const calls = { count: 0 };
  const client = createClient({
    rootKey: svc.rootKey,
    baseUrl: svc.baseUrl,
    logger: silentLogger,
    ...GENEROUS,
    ...options,
    fetch: (input, init) => {
      calls.count++;
      return fetch(input, init);
    },
  });
  return { client, calls };
}

/** A stand-in key service on 127.0.0.1 answering every request with `handler`; for faults the local service cannot make. */
export async function startStub(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ baseUrl: string; close(): Promise<void>; server: Server }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    server,
    baseUrl: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A stub that answers verifyKey with a success envelope holding `data`. */
export function verifyAnswer(data: unknown) {
  return (_req: IncomingMessage, res: ServerResponse) => {
    res.setHeader("Content-Type", "application/json");
    res.end(JSON.stringify({ meta: { requestId: "req_stub" }, data }));
  };
}
