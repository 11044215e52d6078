// startLocalKeyService: the local key service listening on a port (default: any free port on
// 127.0.0.1), with a prompt `close()`.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createApp } from "./app";
import { parseOptions, type LocalKeyServiceOptions } from "./options";
import { ServiceCore, type LocalKeyService } from "./service";

/** How long `close()` lets in-flight requests finish before cutting their connections. */
const CLOSE_GRACE_MS = 1000;

export interface RunningLocalKeyService {
  /** e.g. `http://127.0.0.1:53123` (no trailing slash). */
  baseUrl: string;
  /** Root key of the bootstrap workspace; holds every permission. */
  rootKey: string;
  /** The bootstrap API. */
  apiId: string;
  /** The bootstrap workspace. */
  workspaceId: string;
  service: LocalKeyService;
  /** Stops listening and closes idle keep-alive connections. Safe to call twice. */
  close(): Promise<void>;
}

export async function startLocalKeyService(options?: LocalKeyServiceOptions): Promise<RunningLocalKeyService> {
  const config = parseOptions(options);
  const core = new ServiceCore(config);
  const server = createServer(createApp(core));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.port, config.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  // The bootstrap is written only now: a start that could not listen leaves the data file alone.
  try {
    core.commitBootstrap();
  } catch (err) {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    throw err;
  }
  const { port } = server.address() as AddressInfo;
  const host = config.host.includes(":") ? `[${config.host}]` : config.host;
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= new Promise<void>((resolve, reject) => {
      server.close((err) => (err ? reject(err) : resolve()));
      server.closeIdleConnections();
      // Connections still busy get a short grace period, then are cut.
      setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS).unref();
    });
    return closing;
  };
  return {
    baseUrl: `http://${host}:${port}`,
    rootKey: core.rootKey,
    apiId: core.apiId,
    workspaceId: core.workspaceId,
    service: core,
    close,
  };
}
