// Serving a scenario on Node for the conformance suite: an Express app, or a fetch handler (the Web
// adapter, Hono) through @hono/node-server, on 127.0.0.1 and a free port.
import { createServer, type RequestListener, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createAdaptorServer } from "@hono/node-server";
import type { RunningApp } from "./conformance";

async function listen(server: Server): Promise<RunningApp> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export const serveListener = (listener: RequestListener): Promise<RunningApp> => listen(createServer(listener));

export const serveFetch = (fetch: (request: Request) => Response | Promise<Response>): Promise<RunningApp> =>
  listen(createAdaptorServer({ fetch }) as Server);
