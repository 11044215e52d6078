// The webhook receiver (./webhook-receiver.ts) as a child process of a test: its URL, and what it
// received so far, one entry per request, in order.
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";

export interface Received {
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  status: number;
}

const children: ChildProcess[] = [];

/** Kills every receiver started; call it in afterEach or afterAll. */
export function stopReceivers(): void {
  for (const c of children.splice(0)) c.kill("SIGKILL");
}

/** Starts the receiver process; resolves with its URL, its port, what it received so far, and what kills it. */
export async function receiver(
  env: Record<string, string> = {},
): Promise<{ url: string; port: number; received: Received[]; kill(): Promise<void> }> {
  const child = spawn(process.execPath, ["--import", "tsx", "test/support/webhook-receiver.ts"], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  const received: Received[] = [];
  const lines = createInterface({ input: child.stdout! });
  const port = await new Promise<number>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`receiver exited with ${code}`)));
    lines.on("line", (line) => {
      const parsed = JSON.parse(line) as { port?: number } & Received;
      if (parsed.port !== undefined) resolve(parsed.port);
      else received.push(parsed);
    });
  });
  const kill = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGKILL");
    await gone;
  };
  return { url: `http://127.0.0.1:${port}/hooks`, port, received, kill };
}
