// The conformance scenario served by Bun or Deno for the runtime suites: KG_ADAPTER "web" (the
// fetch handler of keyguard/web) or "hono" (a Hono app), on 127.0.0.1 and a free port, which it
// prints as `LISTENING <port>`. Bun runs this source; Deno runs an ESM bundle of it. With
// KG_REDIS_URL and KG_REDIS_PREFIX it also serves /redis with a redisStore() of its own.
import { honoScenario } from "../apps/hono-app";
import { webScenario } from "../apps/web-app";

type Handler = (request: Request) => Response | Promise<Response>;
declare const Bun: { serve(options: { port: number; hostname: string; fetch: Handler }): { port: number } } | undefined;
declare const Deno:
  | {
      env: { get(name: string): string | undefined };
      serve(options: { port: number; hostname: string; onListen(addr: { port: number }): void }, handler: Handler): unknown;
    }
  | undefined;

function env(name: string): string {
  const value = typeof Deno !== "undefined" ? Deno.env.get(name) : process.env[name];
  if (value === undefined) throw new Error(`${name} is not set`);
  return value;
}

/** With KG_REDIS_URL, the /redis route's redisStore(), made here (ioredis runs on Bun and Deno) and ready before listening. */
async function ownStore(): Promise<unknown> {
  const url = typeof Deno !== "undefined" ? Deno.env.get("KG_REDIS_URL") : process.env.KG_REDIS_URL;
  if (url === undefined) return undefined;
  const { redisStore } = await import("../../../src/redis");
  const store = await redisStore({ url, prefix: env("KG_REDIS_PREFIX") });
  await store.ready;
  return store;
}

const store = await ownStore();
const scenarioEnv = {
  baseUrl: env("KG_BASE_URL"),
  rootKey: env("KG_ROOT_KEY"),
  refusedUrl: env("KG_REFUSED_URL"),
  ...(store === undefined ? {} : { store }),
};
const handler: Handler = env("KG_ADAPTER") === "hono" ? honoScenario(scenarioEnv).fetch : webScenario(scenarioEnv, "auth");
const listening = (port: number) => console.log(`LISTENING ${port}`);

if (typeof Bun !== "undefined") listening(Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: handler }).port);
else if (typeof Deno !== "undefined") Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: ({ port }) => listening(port) }, handler);
else throw new Error("run this with bun or deno");
