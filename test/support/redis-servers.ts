// Redis servers started by the tests from the machine's own `redis-server` on spare loopback ports:
// one speaking TLS only (a CA and a server certificate made with `openssl` at start), and a cluster
// of masters with one replica each (`redis-cli --cluster create`). Each lives in a temporary folder;
// `stop()` kills its processes and removes the folder, and so does the exit of the test process.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Cluster, Redis } from "ioredis";

const run = promisify(execFile);
const live = new Set<{ stop(): void }>();
process.once("exit", () => {
  for (const s of live) s.stop();
});

/** Why these suites cannot run here (printed), or undefined; with env CI set a missing tool throws. */
export async function redisServersSkipReason(suite: string): Promise<string | undefined> {
  for (const tool of [
    ["redis-server", "--version"],
    ["redis-cli", "--version"],
    ["openssl", "version"],
  ]) {
    try {
      await run(tool[0]!, tool.slice(1));
    } catch {
      const reason = `${tool[0]} is not installed`;
      if (process.env.CI) throw new Error(`${suite}: ${reason}, and CI is set.`);
      console.log(`[skipped] ${suite} did not run: ${reason} (apt-get install redis-server openssl).`);
      return reason;
    }
  }
  return undefined;
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/**
 * `n` free ports in 10000..16999 whose cluster-bus port (+10000) is free too: below the range
 * listen(0) draws from (32768 up), so no other test takes one between this check and the server's
 * start (loopback-ports.ts keeps 27000 up for the proxies).
 */
async function sparePorts(n: number): Promise<number[]> {
  const ports: number[] = [];
  while (ports.length < n) {
    const p = 10000 + Math.floor(Math.random() * 7000);
    if (!ports.includes(p) && (await portFree(p)) && (await portFree(p + 10000))) ports.push(p);
  }
  return ports;
}

/** Starts `redis-server` with these arguments and waits until it answers PING over `probe`. */
async function startServer(args: string[], probe: () => Redis): Promise<ChildProcess> {
  const child = spawn("redis-server", args, { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout!.on("data", (c: Buffer) => (output += c.toString()));
  child.stderr!.on("data", (c: Buffer) => (output += c.toString()));
  for (let i = 0; i < 100; i++) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}:\n${output}`);
    const client = probe();
    client.on("error", () => undefined);
    try {
      await client.connect();
      await client.ping();
      return child;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    } finally {
      client.disconnect();
    }
  }
  child.kill("SIGKILL");
  throw new Error(`redis-server did not answer:\n${output}`);
}

const quiet = ["--save", "", "--appendonly", "no", "--bind", "127.0.0.1", "--loglevel", "warning"];
const probeOptions = { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1000 } as const;

/** In `dir`: ca.pem (and its key), other-ca.pem, and server.pem/server.key for 127.0.0.1 and localhost signed by ca.pem. */
async function makeCertificates(dir: string): Promise<void> {
  const f = (name: string) => join(dir, name);
  const ssl = (...args: string[]) => run("openssl", args, { cwd: dir });
  for (const ca of ["ca", "other-ca"]) {
    await ssl(
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-subj",
      `/CN=keyguard test ${ca}`,
      "-days",
      "2",
      "-keyout",
      f(`${ca}.key`),
      "-out",
      f(`${ca}.pem`),
    );
  }
  await ssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", f("server.key"), "-out", f("server.csr"));
  writeFileSync(f("ext.cnf"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
  await ssl(
    "x509",
    "-req",
    "-in",
    f("server.csr"),
    "-CA",
    f("ca.pem"),
    "-CAkey",
    f("ca.key"),
    "-CAcreateserial",
    "-out",
    f("server.pem"),
    "-days",
    "2",
    "-extfile",
    f("ext.cnf"),
  );
}

/** The redis-server arguments of TLS only, with the certificates of {@link makeCertificates}. */
const tlsArgs = (dir: string) => [
  "--port",
  "0",
  "--tls-cert-file",
  join(dir, "server.pem"),
  "--tls-key-file",
  join(dir, "server.key"),
  "--tls-ca-cert-file",
  join(dir, "ca.pem"),
  "--tls-auth-clients",
  "no",
];

export interface TlsRedis {
  /** `rediss://127.0.0.1:<port>`. */
  url: string;
  /** The CA certificate (PEM file) that signed the server's certificate. */
  caFile: string;
  /** A PEM file of another CA, that did not sign it. */
  otherCaFile: string;
  /** An ioredis client of the server, for inspection. */
  client(): Redis;
  stop(): void;
}

/** A Redis speaking only TLS, with a certificate for 127.0.0.1 and localhost signed by a CA made now. */
export async function startTlsRedis(): Promise<TlsRedis> {
  const dir = mkdtempSync(join(tmpdir(), "keyguard-tls-redis-"));
  let child: ChildProcess | undefined;
  const handle = {
    stop() {
      live.delete(handle);
      if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    },
  };
  live.add(handle);
  try {
    const f = (name: string) => join(dir, name);
    await makeCertificates(dir);
    const [port] = await sparePorts(1);
    const tls = { ca: [readFileSync(f("ca.pem"), "utf8")] };
    const client = () => new Redis({ host: "127.0.0.1", port, tls, ...probeOptions });
    child = await startServer([...quiet, "--dir", dir, ...tlsArgs(dir), "--tls-port", String(port)], client);
    return {
      url: `rediss://127.0.0.1:${port}`,
      caFile: f("ca.pem"),
      otherCaFile: f("other-ca.pem"),
      client: () => new Redis({ host: "127.0.0.1", port, tls, maxRetriesPerRequest: 1 }),
      stop: () => handle.stop(),
    };
  } catch (err) {
    handle.stop();
    throw err;
  }
}

export interface RedisCluster {
  /** `redis://127.0.0.1:<port of the first node>` (`rediss://` with TLS): a seed; the client finds the other nodes. */
  url: string;
  /** With TLS: the CA certificate (PEM file) that signed every node's certificate. */
  caFile: string | undefined;
  /** Every node's port. */
  ports: readonly number[];
  /** The port of the master now serving the hash slot of `key`. */
  masterOf(key: string): Promise<number>;
  /** Kills (SIGKILL) the node on `port`. */
  kill(port: number): void;
  /** Resolves once every slot is served again by a master that answers (after a kill: its replica). */
  healed(): Promise<void>;
  /** An ioredis Cluster client (seeded with every node alive), for inspection. */
  client(): Cluster;
  stop(): void;
}

/**
 * A Redis Cluster of `masters` masters (3 at least) with `replicas` replicas each, on spare loopback
 * ports; with `tls`, every node (and the cluster bus) speaks TLS only.
 */
export async function startRedisCluster(options: { masters?: number; replicas?: number; tls?: boolean } = {}): Promise<RedisCluster> {
  const masters = options.masters ?? 3;
  const useTls = options.tls ?? false;
  const replicas = options.replicas ?? 1;
  const dir = mkdtempSync(join(tmpdir(), "keyguard-redis-cluster-"));
  const children = new Map<number, ChildProcess>();
  const handle = {
    stop() {
      live.delete(handle);
      for (const child of children.values()) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    },
  };
  live.add(handle);
  try {
    const ports = await sparePorts(masters * (1 + replicas));
    if (useTls) await makeCertificates(dir);
    const tls = useTls ? { ca: [readFileSync(join(dir, "ca.pem"), "utf8")] } : undefined;
    const node = (port: number) => new Redis({ host: "127.0.0.1", port, ...probeOptions, ...(tls && { tls }) });
    await Promise.all(
      ports.map(async (port) => {
        const home = join(dir, String(port));
        mkdirSync(home);
        const args = [...quiet, "--dir", home, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"];
        if (useTls) args.push(...tlsArgs(dir), "--tls-port", String(port), "--tls-cluster", "yes", "--tls-replication", "yes");
        else args.push("--port", String(port));
        // A master unreachable for 1 s is failed over by its replica.
        args.push("--cluster-node-timeout", "1000");
        children.set(port, await startServer(args, () => node(port)));
      }),
    );
    const nodes = ports.map((p) => `127.0.0.1:${p}`);
    const cliTls = useTls ? ["--tls", "--cacert", join(dir, "ca.pem")] : [];
    await run("redis-cli", [...cliTls, "--cluster", "create", ...nodes, "--cluster-replicas", String(replicas), "--cluster-yes"]);
    const alive = () => ports.filter((p) => children.get(p)!.exitCode === null && children.get(p)!.signalCode === null);
    /** Every live node says the cluster is ok and every slot's master is alive and has its replicas in sync. */
    const settled = async (): Promise<boolean> => {
      for (const port of alive()) {
        const c = node(port);
        c.on("error", () => undefined);
        try {
          await c.connect();
          if (!/cluster_state:ok/.test(await c.cluster("INFO"))) return false;
          const slots = (await c.cluster("SLOTS")) as unknown as Array<[number, number, [string, number], ...Array<[string, number]>]>;
          if (slots.reduce((n, [from, to]) => n + (to - from + 1), 0) !== 16384) return false;
          if (slots.some(([, , master]) => !alive().includes(master[1]))) return false;
          const role = (await c.role()) as [string, ...unknown[]];
          if (role[0] === "slave" && role[3] !== "connected") return false;
        } catch {
          return false;
        } finally {
          c.disconnect();
        }
      }
      return true;
    };
    const healed = async () => {
      for (let i = 0; i < 300; i++) {
        if (await settled()) return;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error("the Redis cluster did not settle within 30 s");
    };
    await healed();
    return {
      url: `${useTls ? "rediss" : "redis"}://127.0.0.1:${ports[0]}`,
      caFile: useTls ? join(dir, "ca.pem") : undefined,
      ports,
      async masterOf(key) {
        const c = node(alive()[0]!);
        try {
          await c.connect();
          const slot = Number(await c.cluster("KEYSLOT", key));
          const slots = (await c.cluster("SLOTS")) as unknown as Array<[number, number, [string, number]]>;
          const found = slots.find(([from, to]) => slot >= from && slot <= to);
          if (!found) throw new Error(`no master serves slot ${slot}`);
          return found[2][1];
        } finally {
          c.disconnect();
        }
      },
      kill(port) {
        children.get(port)?.kill("SIGKILL");
      },
      healed,
      client: () => {
        const client = new Cluster(
          alive().map((port) => ({ host: "127.0.0.1", port })),
          tls ? { redisOptions: { tls }, dnsLookup: (address, callback) => callback(null, address) } : {},
        );
        client.on("error", () => undefined);
        return client;
      },
      stop: () => handle.stop(),
    };
  } catch (err) {
    handle.stop();
    throw err;
  }
}
