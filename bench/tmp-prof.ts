// temp: profile one app side under load
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { createClient } from "keyguard/client";
import { load } from "./load";
import type { ServiceInfo } from "./servers";
const here = fileURLToPath(new URL(".", import.meta.url));
const side = process.argv[2] ?? "keyguard";
const keyKind = process.argv[3] ?? "repeated";
async function child<T>(mode: string, core: number, prof: boolean, env: Record<string, string> = {}) {
  const c = spawn("taskset", ["-c", String(core), process.execPath, ...(prof ? ["--cpu-prof", "--cpu-prof-dir=/tmp/speed-prof"] : []), "--import", "tsx", `${here}servers.ts`, mode], { stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, ...env } });
  const [line] = (await once(createInterface({ input: c.stdout! }), "line")) as [string];
  return { c, info: JSON.parse(line) as T };
}
const svc = await child<ServiceInfo>("service", 0, false);
const client = createClient({ rootKey: svc.info.rootKey, baseUrl: svc.info.baseUrl, retry: false });
const k = await client.keys.createKey({ apiId: svc.info.apiId, ...(keyKind === "credits" ? { credits: { remaining: 1e9 } } : {}) });
const apps = await child<Record<string, string>>("apps", 1, true, { BENCH_CONFIG: JSON.stringify({ baseUrl: svc.info.baseUrl, rootKey: svc.info.rootKey, downUrl: "http://127.0.0.1:1", hangUrl: svc.info.hangUrl, deadline: 2500 }) });
const r = await load({ url: `${apps.info[side]}/r`, duration: Number(process.env.D ?? 8), cpuUrl: apps.info.cpu, headers: { authorization: `Bearer ${k.key}` } });
console.log(side, keyKind, Math.round(r.rps), "rps", Math.round(r.cpuPerRequest!), "µs/req", JSON.stringify(r.statuses));
apps.c.kill(); svc.c.kill();
await once(apps.c, "exit");
