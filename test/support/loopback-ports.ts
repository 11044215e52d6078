// Loopback ports that the kernel never hands to listen(0), for tests that need a port to stay
// theirs while nothing listens on it.
//
// A port taken with listen(0) and released again goes back to the pool: the next listen(0), in
// any worker, may get it. A "refused" address made that way once answered 404 in CI (another
// file's server had the port), and a proxy stopped for an outage could find its port taken when
// it starts again. listen(0) draws from 32768–60999 here (net.ipv4.ip_local_port_range); these
// ports lie below it.
import { connect, type Server } from "node:net";
import { randomInt } from "node:crypto";

const HOST = "127.0.0.1";

/**
 * Where a restartable proxy or receiver listens: 27000–32767 (the Redis servers the tests start
 * take 10000–16999, and their cluster buses 10000 above: redis-servers.ts).
 */
const PROXY_PORTS = { from: 27_000, to: 32_768 };

/** Port 2: outside the range, only a privileged process could listen on it, and fetch() does not refuse it. */
const REFUSED_PORT = 2;
let refusedChecked: Promise<void> | undefined;

function checkRefused(): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect(REFUSED_PORT, HOST);
    socket.once("connect", () => {
      socket.destroy();
      reject(new Error(`refusedUrl(): something listens on ${HOST}:${REFUSED_PORT}; the tests need it closed`));
    });
    socket.once("error", (err: NodeJS.ErrnoException) => {
      if (err.code === "ECONNREFUSED") resolve();
      else
        reject(new Error(`refusedUrl(): connecting to ${HOST}:${REFUSED_PORT} failed with ${err.code ?? err.message}, not ECONNREFUSED`));
    });
  });
}

/** `http://127.0.0.1:2` plus `path`: connections to it are refused at once. */
export async function refusedUrl(path = ""): Promise<string> {
  refusedChecked ??= checkRefused();
  await refusedChecked;
  return `http://${HOST}:${REFUSED_PORT}${path}`;
}

/** Listens on `port` of 127.0.0.1; rejects with the listen error (EADDRINUSE) instead of emitting it. */
export function listenOn(server: Server, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const failed = (err: Error) => reject(err);
    server.once("error", failed);
    server.listen(port, HOST, () => {
      server.off("error", failed);
      resolve();
    });
  });
}

/**
 * Listens on a free port of 127.0.0.1 that listen(0) never hands out, so that the server can
 * close and listen on it again (an outage and the way back) without another test taking it
 * meanwhile. Returns the port.
 */
export async function listenOnSparePort(server: Server): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = randomInt(PROXY_PORTS.from, PROXY_PORTS.to);
    try {
      await listenOn(server, port);
      return port;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EADDRINUSE") throw err;
    }
  }
  throw new Error(`listenOnSparePort(): no free port in ${PROXY_PORTS.from}..${PROXY_PORTS.to - 1} after 100 tries`);
}
