// Fixtures for the fleet tests and bench: Redis reachability (with the skip rule), a counting (and
// optionally holding) HTTP proxy in front of the key service, a TCP proxy in front of Redis that
// can be cut and restored, and apps listening on 127.0.0.1 port 0.
import { randomUUID } from "node:crypto";
import { createServer, request as httpRequest, type Server } from "node:http";
import { connect, createServer as createTcpServer, type Server as TcpServer, type Socket } from "node:net";
import type { AddressInfo } from "node:net";
import { listenOn, listenOnSparePort } from "../support/loopback-ports";
import { REDIS_URL } from "../support/postgres-redis";

export { REDIS_URL };
/** The test Redis (env KEYGUARD_TEST_REDIS_URL, as for every Redis suite): where the probe and the TCP proxy connect. */
const redisAddress = new URL(REDIS_URL);
export const REDIS_HOST = redisAddress.hostname;
export const REDIS_PORT = Number(redisAddress.port || 6379);

/** Whether Redis answers PING within a second (NOAUTH is an answer too: the URL's password is for the clients). */
export function redisReachable(): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(REDIS_PORT, REDIS_HOST);
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.on("error", () => done(false));
    socket.on("connect", () => socket.write("PING\r\n"));
    socket.on("data", (d) => done(/^(\+PONG|-NOAUTH)/.test(d.toString())));
  });
}

/**
 * True when the suite must skip: Redis is unreachable and env CI is not set (then it prints which
 * suite did not run and why). With CI set, an unreachable Redis fails the suite instead.
 */
export async function skipWithoutRedis(suite: string): Promise<boolean> {
  if (await redisReachable()) return false;
  if (process.env.CI) throw new Error(`${suite}: Redis is not reachable at ${REDIS_URL}, and CI is set`);
  console.log(`SKIPPED ${suite}: Redis is not reachable at ${REDIS_URL} (set CI=1 to make this a failure)`);
  return true;
}

const prefixes: string[] = [];

/** A Redis key prefix no other test run shares (removed again by {@link removePrefixes}). */
export const uniquePrefix = (name: string): string => {
  const prefix = `kgtest:${name}:${randomUUID().slice(0, 8)}:`;
  prefixes.push(prefix);
  return prefix;
};

/** Deletes every Redis key under the prefixes this process made (some, e.g. `seq`, have no TTL). */
export async function removePrefixes(): Promise<void> {
  const { Redis } = await import("ioredis");
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    for (const prefix of prefixes.splice(0)) {
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length > 0) await redis.del(...keys);
    }
  } finally {
    redis.disconnect();
  }
}

/** An HTTP proxy in front of the key service that counts verifyKey calls and can hold their answers. */
export async function countingProxy(target: string) {
  const upstream = new URL(target);
  let verifyCalls = 0;
  let verifyAnswered = 0;
  let hold: Promise<void> | undefined;
  const server: Server = createServer((req, res) => {
    const isVerify = req.url?.endsWith("/v2/keys.verifyKey") === true;
    if (isVerify) verifyCalls++;
    const held = isVerify ? hold : undefined;
    const out = httpRequest(
      { host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: req.headers },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on("data", (c: Buffer) => chunks.push(c));
        answer.on("end", () => {
          if (isVerify) verifyAnswered++;
          void Promise.resolve(held).then(() => {
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            res.end(Buffer.concat(chunks));
          });
        });
      },
    );
    out.on("error", () => res.destroy());
    req.pipe(out);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get verifyCalls() {
      return verifyCalls;
    },
    /** verifyKey calls the service has answered (held or not). */
    get verifyAnswered() {
      return verifyAnswered;
    },
    /** Holds verifyKey answers (the service has answered; the caller does not have it yet) until release(). */
    holdAnswers(): () => void {
      let release!: () => void;
      hold = new Promise((r) => (release = r));
      return () => {
        hold = undefined;
        release();
      };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A TCP proxy in front of Redis: `cut()` drops every connection and refuses new ones until `restore()`. */
export async function redisProxy() {
  const sockets = new Set<Socket>();
  let server: TcpServer | undefined;
  let port = 0;
  let stalled = false;
  let dropOn: string | undefined;
  let dropped = 0;
  async function listen(): Promise<void> {
    server = createTcpServer((client) => {
      const backend = connect(REDIS_PORT, REDIS_HOST);
      sockets.add(client).add(backend);
      client.pipe(backend).pipe(client);
      if (stalled) {
        client.pause();
        backend.pause();
      }
      const drop = () => {
        client.destroy();
        backend.destroy();
        sockets.delete(client);
        sockets.delete(backend);
      };
      client.on("error", drop).on("close", drop);
      backend.on("error", drop).on("close", drop);
      // A connection that sends the command named is cut before it can be answered.
      client.on("data", (chunk: Buffer) => {
        if (dropOn !== undefined && chunk.toString("latin1").toLowerCase().includes(`\r\n${dropOn}\r\n`)) {
          dropped++;
          drop();
        }
      });
    });
    // The first time on a port no other test can take while the proxy is cut.
    if (port === 0) port = await listenOnSparePort(server);
    else await listenOn(server, port);
  }
  await listen();
  return {
    get url() {
      // The test Redis's URL (credentials, database) with the proxy's address.
      const url = new URL(REDIS_URL);
      url.hostname = "127.0.0.1";
      url.port = String(port);
      return url.toString();
    },
    async cut(): Promise<void> {
      const s = server!;
      server = undefined;
      for (const socket of sockets) socket.destroy();
      sockets.clear();
      await new Promise<void>((resolve) => s.close(() => resolve()));
    },
    restore: listen,
    /** Stops forwarding (connections stay open, nothing gets through: a Redis that does not answer). */
    stall(): void {
      stalled = true;
      for (const socket of sockets) socket.pause();
    },
    unstall(): void {
      stalled = false;
      for (const socket of sockets) socket.resume();
    },
    /** Cuts every connection that sends the command `name` (lower case), until called with undefined. */
    dropOn(name: string | undefined): void {
      dropOn = name;
    },
    /** How many connections `dropOn` cut. */
    get dropped(): number {
      return dropped;
    },
    async close(): Promise<void> {
      if (server !== undefined) await this.cut();
    },
  };
}

/** Listens on 127.0.0.1 port 0; returns the base URL and a close function. */
export async function listen(handler: Parameters<typeof createServer>[1]): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Polls `check` until it returns true (every 5 ms, at most `limit` ms); returns whether it did. */
export async function eventually(check: () => boolean | Promise<boolean>, limit = 5000): Promise<boolean> {
  const until = Date.now() + limit;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > until) return false;
    await new Promise((r) => setTimeout(r, 5));
  }
}
