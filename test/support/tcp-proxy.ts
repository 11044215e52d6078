// A TCP proxy on loopback, started by a test in front of PostgreSQL or Redis: stopping it is an
// outage (connections cut, new ones refused) and starting it again on the same port is the
// server coming back.
import { createServer, connect, type Server, type Socket } from "node:net";
import { listenOn, listenOnSparePort } from "./loopback-ports";

export interface TcpProxy {
  readonly port: number;
  /** Closes the listener and cuts every open connection. */
  stop(): Promise<void>;
  /** Listens again on the same port. */
  start(): Promise<void>;
  /** A server that hangs: connections stay open and new ones are accepted, but nothing is forwarded. */
  hang(): void;
  /** Forwards again what `hang` held back. */
  resume(): void;
}

export async function startTcpProxy(targetPort: number, targetHost = "127.0.0.1"): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let port = 0;
  let hanging = false;
  const held: Array<() => void> = [];
  const listen = async (): Promise<void> => {
    const s = createServer((client) => {
      const upstream = connect(targetPort, targetHost);
      for (const sock of [client, upstream]) {
        sockets.add(sock);
        sock.on("close", () => sockets.delete(sock));
        sock.on("error", () => {
          client.destroy();
          upstream.destroy();
        });
      }
      const pipe = () => {
        client.pipe(upstream).pipe(client);
      };
      if (hanging) held.push(pipe);
      else pipe();
    });
    // The first time on a port no other test can take while the proxy is stopped.
    if (port === 0) port = await listenOnSparePort(s);
    else await listenOn(s, port);
    server = s;
  };
  await listen();
  return {
    get port() {
      return port;
    },
    async stop() {
      const s = server;
      server = undefined;
      for (const sock of sockets) sock.destroy();
      if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
    },
    async start() {
      if (!server) await listen();
    },
    hang() {
      hanging = true;
      for (const sock of sockets) sock.pause();
    },
    resume() {
      hanging = false;
      for (const sock of sockets) sock.resume();
      for (const pipe of held.splice(0)) pipe();
    },
  };
}
