// `keyguard serve --root-key-failure-limit <n>` in a child process: n failed root keys from one
// address, then 429; 0 turns the limit off; a value that is not a whole number exits 2.
import { afterEach, describe, expect, it } from "vitest";
import { killChildren, run, serve } from "./cli-process";
import { makeCall } from "../server/helpers";

afterEach(killChildren);

const wrong = (i: number) => `root_${String(i).padStart(48, "0")}`;

describe("keyguard serve --root-key-failure-limit", () => {
  it("answers 429 after n failed root keys from one address", async () => {
    const served = await serve(["--port", "0", "--root-key-failure-limit", "2"]);
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await makeCall(served.baseUrl, wrong(i))("apis.getApi", { apiId: served.apiId })).status);
    expect(statuses).toEqual([401, 401, 429]);
  });

  it("0 turns it off", async () => {
    const served = await serve(["--port", "0", "--root-key-failure-limit", "0"]);
    const statuses = new Set<number>();
    for (let i = 0; i < 105; i++) statuses.add((await makeCall(served.baseUrl, wrong(i))("apis.getApi", { apiId: served.apiId })).status);
    expect([...statuses]).toEqual([401]);
  });

  it("refuses a value that is not a whole number, and --help names the flag", async () => {
    const [bad, help] = await Promise.all([run(["serve", "--root-key-failure-limit", "many"]), run(["--help"])]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/^keyguard: invalid --root-key-failure-limit = "many"\. Use a whole number 1\.\.1000000/m);
    expect(help.stdout).toContain("--root-key-failure-limit <n>");
  });
});
