// An HTTP proxy in front of the local key service, started by the conformance suite: it counts the
// verifyKey calls the adapters make, and injects the outages no service fault covers: a service
// that hangs, one that resets the connection, and a gate that holds calls (to see them coalesce).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface ServiceProxy {
  readonly url: string;
  /** verifyKey calls received so far. */
  readonly verifyCalls: number;
  /** verifyKey calls held at the gate right now. */
  readonly held: number;
  /** "forward" (default); "hang": accept and never answer; "reset": cut the connection. */
  mode: "forward" | "hang" | "reset";
  /** Holds every call until the returned function is called. */
  hold(): () => void;
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

/** Headers of one connection (or set by fetch itself), not forwarded. */
const HOP_BY_HOP = new Set(["host", "connection", "keep-alive", "transfer-encoding", "content-length", "accept-encoding"]);

export async function startServiceProxy(target: string): Promise<ServiceProxy> {
  let verifyCalls = 0;
  let held = 0;
  let gate: Promise<void> | undefined;
  const sockets = new Set<Socket>();
  const proxy: ServiceProxy = {
    mode: "forward",
    url: "",
    get verifyCalls() {
      return verifyCalls;
    },
    get held() {
      return held;
    },
    hold() {
      let release!: () => void;
      gate = new Promise<void>((resolve) => (release = resolve));
      return () => {
        gate = undefined;
        release();
      };
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    void (async () => {
      const body = await readBody(req);
      if (req.url?.endsWith("/keys.verifyKey")) verifyCalls++;
      if (proxy.mode === "hang") return;
      if (proxy.mode === "reset") return req.socket.destroy();
      if (gate !== undefined) {
        held++;
        await gate;
        held--;
      }
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers))
        if (typeof value === "string" && !HOP_BY_HOP.has(name)) headers.set(name, value);
      const answer = await fetch(`${target}${req.url}`, { method: req.method, headers, body: req.method === "GET" ? undefined : body });
      const text = Buffer.from(await answer.arrayBuffer());
      const out: Record<string, string> = {};
      answer.headers.forEach((value, name) => {
        if (name !== "content-encoding" && name !== "transfer-encoding" && name !== "connection" && name !== "keep-alive")
          out[name] = value;
      });
      out["content-length"] = String(text.length);
      res.writeHead(answer.status, out).end(text);
    })().catch(() => req.socket.destroy());
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  (proxy as { url: string }).url = `http://127.0.0.1:${port}`;
  return proxy;
}
