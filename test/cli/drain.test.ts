// SIGTERM drains `keyguard serve` (a real child process on a SQLite data file): it stops accepting
// at once, lets a request in flight finish (its answer says Connection: close), writes the
// verification events still buffered and exits 0; a request that does not finish within
// --drain-timeout is cut and the process still exits.
import { request, type ClientRequest, type IncomingMessage } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { exited, killChildren, serve, type Served } from "./cli-process";
import { makeCall } from "../server/helpers";

const dir = mkdtempSync(join(tmpdir(), "keyguard-drain-"));
const ROOT_KEY = "root_drainTest0001_4f1c9e27b8a35d60e2b7c41f9a0d8e36";
afterEach(killChildren);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A verifyKey request whose body is sent in two parts: it stays in flight until `finish()`. */
function halfSent(
  baseUrl: string,
  key: string,
): { req: ClientRequest; answer: Promise<IncomingMessage & { text: string }>; finish(): void } {
  const body = JSON.stringify({ key });
  const cut = Math.floor(body.length / 2);
  const url = new URL("/v2/keys.verifyKey", baseUrl);
  const req = request(url, {
    method: "POST",
    headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body), authorization: `Bearer ${ROOT_KEY}` },
  });
  const answer = new Promise<IncomingMessage & { text: string }>((resolve, reject) => {
    req.on("response", (res) => {
      let text = "";
      res.on("data", (c: Buffer) => (text += c.toString()));
      res.on("end", () => resolve(Object.assign(res, { text })));
    });
    req.on("error", reject);
  });
  answer.catch(() => {}); // awaited by the test; a test that fails early must not leave it unhandled
  req.write(body.slice(0, cut));
  req.flushHeaders();
  return { req, answer, finish: () => req.end(body.slice(cut)) };
}

/** Resolves once the child printed `text`. */
function printed(served: Served, text: string): Promise<void> {
  return new Promise((resolve) => {
    let out = "";
    const on = (c: Buffer) => {
      out += c.toString();
      if (out.includes(text)) resolve();
    };
    served.child.stdout!.on("data", on);
    served.child.stderr!.on("data", on);
  });
}

describe("keyguard serve on SIGTERM", () => {
  it("stops accepting, finishes the request in flight, writes the buffered events, exits 0", { timeout: 60_000 }, async () => {
    const dataFile = join(dir, "drain.db");
    const first = await serve(["--port", "0", "--data", dataFile, "--drain-timeout", "30"], { UNKEY_ROOT_KEY: ROOT_KEY });
    const call = makeCall(first.baseUrl, ROOT_KEY);
    const { key, keyId } = (await call("keys.createKey", { apiId: first.apiId })).body.data;
    // Buffered: the service writes events every second, so some of these are still in memory.
    for (let i = 0; i < 20; i++) expect((await call("keys.verifyKey", { key })).body.data.valid).toBe(true);
    const inFlight = halfSent(first.baseUrl, key);
    await new Promise((r) => setTimeout(r, 100)); // the request's head reached the server

    const draining = printed(first, "draining");
    first.child.kill("SIGTERM");
    await draining;
    // No new connection is accepted.
    const url = new URL(first.baseUrl);
    const refused = await new Promise<string>((resolve) => {
      const socket = connect(Number(url.port), url.hostname);
      socket.once("connect", () => (socket.destroy(), resolve("accepted")));
      socket.once("error", (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    });
    expect(refused).toBe("ECONNREFUSED");
    expect(first.child.exitCode).toBeNull(); // still draining: the request is in flight

    inFlight.finish();
    const res = await inFlight.answer;
    expect(res.statusCode).toBe(200);
    expect(res.headers.connection).toBe("close");
    expect(JSON.parse(res.text).data).toMatchObject({ valid: true, code: "VALID" });
    expect(await exited(first.child)).toBe(0);

    // Every verification answered before the exit is in the data file: 20 and the drained one.
    const second = await serve(["--port", "0", "--data", dataFile], { UNKEY_ROOT_KEY: ROOT_KEY });
    const again = makeCall(second.baseUrl, ROOT_KEY);
    const counted = await again("analytics.getVerifications", {
      query: `SELECT count(*) AS n FROM key_verifications_v1 WHERE key_id = '${keyId}'`,
    });
    expect(counted.body.data).toEqual([{ n: 21 }]);
    second.child.kill("SIGTERM");
    expect(await exited(second.child)).toBe(0);
  });

  it("cuts a request that does not finish within --drain-timeout, then exits", { timeout: 60_000 }, async () => {
    const served = await serve(["--port", "0", "--drain-timeout", "1"], { UNKEY_ROOT_KEY: ROOT_KEY });
    const call = makeCall(served.baseUrl, ROOT_KEY);
    const { key } = (await call("keys.createKey", { apiId: served.apiId })).body.data;
    const stuck = halfSent(served.baseUrl, key);
    await new Promise((r) => setTimeout(r, 100));
    const output = printed(served, "requests still in flight when the drain ended were cut");
    served.child.kill("SIGTERM");
    // The body never completes: the connection is cut without an answer.
    await expect(stuck.answer).rejects.toThrow(/socket hang up|ECONNRESET/);
    await output;
    expect(await exited(served.child)).toBe(0);
  });
});
