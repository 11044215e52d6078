// The demo behind `npm start`: it prints curl commands, and each gives the status it promises.
import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { createInterface } from "node:readline";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const demoArgs = ["--import", "tsx", "examples/demo.ts"];

function startDemo(env: Record<string, string>) {
  const child = spawn(process.execPath, demoArgs, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  return { child, stderr: () => stderr };
}

describe("npm start (examples/demo.ts)", () => {
  const demo = startDemo({ PORT: "0", KEYGUARD_SERVICE_PORT: "0", UNKEY_ROOT_KEY: "" });
  afterAll(() => {
    demo.child.kill("SIGKILL");
  });

  it("prints curl commands, each giving the status it promises, and stops on Ctrl-C", async () => {
    const printed: string[] = [];
    const lines = createInterface({ input: demo.child.stdout });
    for await (const line of lines) {
      printed.push(line);
      if (line.includes("Press Ctrl-C")) break;
    }
    const commands = printed
      .map((line) => /^\s+(\d{3})\s+(.+)$/.exec(line))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => ({ expected: Number(m[1]), command: m[2]! }));
    expect(commands.map((c) => c.expected)).toEqual([200, 401, 401, 403, 429]);

    for (const { expected, command } of commands) {
      const { stdout } = await run("bash", ["-c", command]);
      // `curl -i` prints the status line first; the loop prints one status per line, the last one counts.
      const statuses = [...stdout.matchAll(/^(?:HTTP\/[\d.]+ )?(\d{3})\b/gm)].map((m) => Number(m[1]));
      expect({ command, status: statuses.at(-1) }).toEqual({ command, status: expected });
      if (command.includes("for i in")) expect(statuses).toEqual([200, 200, 200, 429]);
    }

    // The console's address, and the root key to sign in with (generated, so printed).
    const consoleLine = printed.map((line) => /console\s+(http:\/\/\S+)\s+\(sign in with the root key (\S+)\)/.exec(line)).find(Boolean);
    expect(consoleLine, printed.join("\n")).toBeTruthy();
    const [, consoleUrl, rootKey] = consoleLine!;
    const page = await fetch(consoleUrl!);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-security-policy")).toContain("default-src 'self'");
    const signIn = await fetch(new URL("/v2/apis.listApis", consoleUrl), {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${rootKey}` },
      body: "{}",
    });
    expect(signIn.status).toBe(200);

    demo.child.kill("SIGINT");
    const [code] = await once(demo.child, "exit");
    expect(code).toBe(0);
  });
});

describe("demo port handling", () => {
  it("says which port is taken and how to pick another, without a stack trace", async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    const taken = (blocker.address() as AddressInfo).port;
    try {
      const demo = startDemo({ PORT: "0", KEYGUARD_SERVICE_PORT: String(taken) });
      const [code] = await once(demo.child, "exit");
      expect(code).toBe(1);
      expect(demo.stderr()).toContain(`port ${taken} for the key service is taken`);
      expect(demo.stderr()).toContain("KEYGUARD_SERVICE_PORT=<port> npm start");
      expect(demo.stderr()).not.toMatch(/^\s+at /m);
    } finally {
      blocker.close();
    }
  });

  it("rejects a port that is not a number", async () => {
    const demo = startDemo({ PORT: "http", KEYGUARD_SERVICE_PORT: "0" });
    const [code] = await once(demo.child, "exit");
    expect(code).toBe(1);
    expect(demo.stderr()).toContain('PORT="http" is not a port number');
  });
});
