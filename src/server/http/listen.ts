// startLocalKeyService: the local key service listening on a port (default: any free port on
// 127.0.0.1), with a prompt `close()`.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { consoleHandler } from "./console-files";
import { createApp } from "./app";
import { openCore, openStore, storeCloser } from "../factory";
import { parseOptions, type LocalKeyServiceOptions } from "../options";
import type { LocalKeyService } from "../service";

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
  /**
   * Stops listening, closes idle keep-alive connections, writes the verification events still
   * buffered, then closes the store it opened. Safe to call twice.
   */
  close(): Promise<void>;
}

export async function startLocalKeyService(options?: LocalKeyServiceOptions): Promise<RunningLocalKeyService> {
  const config = parseOptions(options);
  // The console's files are read before anything opens: missing files are a config error.
  const consoleFiles = config.console ? consoleHandler() : undefined;
  // The store is opened (a data file read) before listening, but written only once listening:
  // a start that could not listen leaves the data file alone.
  const opened = await openStore(config);
  const closeStore = storeCloser(opened);
  // Requests that arrive before the bootstrap is done wait for the app.
  const app: { handle?: (req: IncomingMessage, res: ServerResponse) => void } = {};
  let ready: () => void = () => {};
  const started = new Promise<void>((resolve) => (ready = resolve));
  const server = createServer((req, res) => {
    if (app.handle) return app.handle(req, res);
    void started.then(() => app.handle!(req, res));
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(config.port, config.host, () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (err) {
    await closeStore();
    throw err;
  }
  let core;
  try {
    core = await openCore(config, opened);
  } catch (err) {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    throw err;
  }
  app.handle = createApp(core, consoleFiles);
  ready();
  const { port } = server.address() as AddressInfo;
  const host = config.host.includes(":") ? `[${config.host}]` : config.host;
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= new Promise<void>((resolve, reject) => {
      server.close((err) => (err ? reject(err) : resolve()));
      server.closeIdleConnections();
      // Connections still busy get a short grace period, then are cut.
      setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS).unref();
    })
      .finally(() => core.close())
      .finally(closeStore);
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
