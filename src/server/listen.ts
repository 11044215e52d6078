// startLocalKeyService: the local key service listening on a port (default: any free port on
// 127.0.0.1), over HTTP or HTTPS (`tls`, whose files `reloadTls()` reads again), and its `close()`
// that drains: stop accepting, let the requests in flight finish (within `drainTimeoutMs`, then
// cut), write the verification events still buffered, close the store.
import { createServer, type IncomingMessage, type RequestListener, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { consoleHandler } from "./http/console-files";
import { createApp } from "./http/app";
import { readTls } from "./http/tls";
import { openCore, openStore, storeCloser } from "./factory";
import { parseOptions, type LocalKeyServiceOptions } from "./options";
import type { LocalKeyService } from "./service";
import { LocalServiceConfigError } from "./errors";

export interface RunningLocalKeyService {
  /** e.g. `http://127.0.0.1:53123`, or `https://…` with `tls` (no trailing slash). */
  baseUrl: string;
  /** Whether it serves HTTPS (the `tls` option). */
  secure: boolean;
  /**
   * Reads the `tls` files again and serves new connections with them; connections already open
   * keep theirs. On a file that cannot be read or used it throws LocalServiceConfigError (naming
   * the option and why) and the certificate in use stays. Throws too when the service has no `tls`.
   */
  reloadTls(): void;
  /** Root key of the bootstrap workspace; holds every permission. */
  rootKey: string;
  /** The bootstrap API. */
  apiId: string;
  /** The bootstrap workspace. */
  workspaceId: string;
  service: LocalKeyService;
  /**
   * Drains and stops: stops listening and closes idle keep-alive connections at once (the
   * readiness probe answers 503 from then on), lets the requests in flight finish (their answers
   * say `Connection: close`) for up to `drainTimeoutMs`, then cuts the connections still open;
   * then writes the verification events still buffered and closes the store it opened. Requests
   * cut are reported on the logger. Safe to call twice.
   */
  close(): Promise<void>;
}

export async function startLocalKeyService(options?: LocalKeyServiceOptions): Promise<RunningLocalKeyService> {
  const config = parseOptions(options);
  // The console's files are read before anything opens: missing files are a config error.
  const consoleFiles = config.console ? consoleHandler() : undefined;
  // So are the TLS files: a certificate that cannot be used stops the start.
  const tls = config.tls && readTls(config.tls);
  // The store is opened (a data file read) before listening, but written only once listening:
  // a start that could not listen leaves the data file alone.
  const opened = await openStore(config);
  const closeStore = storeCloser(opened);
  // Requests that arrive before the bootstrap is done wait for the app.
  const app: { handle?: (req: IncomingMessage, res: ServerResponse) => void } = {};
  let ready: () => void = () => {};
  const started = new Promise<void>((resolve) => (ready = resolve));
  /** The answers not yet sent, so that a drain can end their connections once they are. */
  const inFlight = new Set<ServerResponse>();
  let draining = false;
  /** A response's "close" listener (shared: no closure per request). */
  function answered(this: ServerResponse): void {
    inFlight.delete(this);
  }
  const handler: RequestListener = (req, res) => {
    if (draining) res.shouldKeepAlive = false;
    inFlight.add(res);
    res.on("close", answered);
    if (app.handle) return app.handle(req, res);
    void started.then(() => app.handle!(req, res));
  };
  // With a client CA, a client without a certificate it signed is refused in the handshake.
  const mutual = config.tls?.clientCaFile !== undefined;
  const server = tls ? createHttpsServer({ ...tls, requestCert: mutual, rejectUnauthorized: mutual }, handler) : createServer(handler);
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
    closing ??= (async () => {
      draining = true;
      core.draining = true;
      await new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeIdleConnections();
        for (const res of inFlight) {
          if (!res.headersSent) res.shouldKeepAlive = false;
          // An answer already under way on a keep-alive connection: its connection ends after it.
          else res.once("finish", () => setImmediate(() => server.closeIdleConnections()));
        }
        // Requests still in flight at the bound are cut.
        setTimeout(() => {
          if (inFlight.size > 0) {
            const fields = { cut: inFlight.size, drainTimeoutMs: config.drainTimeoutMs };
            config.logger.warn(fields, "keyguard/server: requests still in flight when the drain ended were cut");
          }
          server.closeAllConnections();
        }, config.drainTimeoutMs).unref();
      }).finally(() => core.close().finally(closeStore));
    })();
    return closing;
  };
  const reloadTls = (): void => {
    if (!config.tls || !("setSecureContext" in server)) {
      throw new LocalServiceConfigError("keyguard/server: reloadTls() needs the tls option: this service serves plain HTTP.", {
        option: "tls",
      });
    }
    // Read and checked before the swap: on any error the context in use stays.
    server.setSecureContext(readTls(config.tls));
  };
  return {
    baseUrl: `${tls ? "https" : "http"}://${host}:${port}`,
    secure: config.secure,
    reloadTls,
    rootKey: core.rootKey,
    apiId: core.apiId,
    workspaceId: core.workspaceId,
    service: core,
    close,
  };
}
