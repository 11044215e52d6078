// The adapters group's apps on Bun and Deno: the same route (`GET /r` answering `{"ok":true}`)
// served by the runtime's own server (Bun.serve, Deno.serve) bare, behind a no-op wrapper (the
// cheapest thing a fetch handler can run in keyguard's place: a plain function calling the
// handler), behind a read of the Authorization header alone, and behind keyguard/web with a
// cached key. Run by bun or deno on the bundle scripts/build-bench.mjs makes of this file; BENCH_CONFIG gives the key service. Prints one JSON
// line with the URLs and `cpu` (this process's `process.cpuUsage()`), then serves until killed.
import process from "node:process";
import { silentLogger, webApiKeyAuth, type WebAuthResult } from "keyguard/web";
import { readsAuthorization } from "./reads-authorization";

type Handler = (request: Request) => Response | Promise<Response>;
declare const Bun: { serve(options: { port: number; hostname: string; fetch: Handler }): { port: number } } | undefined;
declare const Deno:
  | {
      env: { get(name: string): string | undefined };
      serve(options: { port: number; hostname: string; onListen(addr: { port: number }): void }, handler: Handler): unknown;
    }
  | undefined;

const BODY = { ok: true };
const config = JSON.parse((typeof Deno !== "undefined" ? Deno.env.get("BENCH_CONFIG") : process.env.BENCH_CONFIG) ?? "{}") as {
  baseUrl: string;
  rootKey: string;
  deadline: number;
};

const bare: Handler = () => Response.json(BODY);
const noop =
  (handler: Handler): Handler =>
  (request) =>
    handler(request);
const auth = webApiKeyAuth({ ...config, logger: silentLogger });
const answer = (result: WebAuthResult | Response): Response =>
  result instanceof Response ? result : Response.json(BODY, { headers: result.headers });
// auth.decide: the answer at once for a cached key (the documented form for a handler that may return a Response or a promise of one).
const protectedApp: Handler = (request) => {
  const result = auth.decide(request);
  return result instanceof Promise ? result.then(answer) : answer(result);
};
const cpu: Handler = () => Response.json(process.cpuUsage());

function serve(handler: Handler): Promise<string> {
  if (typeof Bun !== "undefined")
    return Promise.resolve(`http://127.0.0.1:${Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: handler }).port}`);
  if (typeof Deno === "undefined") throw new Error("run this with bun or deno");
  const deno = Deno;
  return new Promise((resolve) => {
    deno.serve({ port: 0, hostname: "127.0.0.1", onListen: ({ port }) => resolve(`http://127.0.0.1:${port}`) }, handler);
  });
}

const apps = {
  cpu: `${await serve(cpu)}/cpu`,
  bare: await serve(bare),
  noop: await serve(noop(bare)),
  header: await serve(readsAuthorization(bare)),
  keyguard: await serve(protectedApp),
};
console.log(JSON.stringify(apps));
