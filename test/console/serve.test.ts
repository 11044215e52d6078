// `keyguard serve` serves the console at / by default and prints its address; --no-console turns
// it off, leaving / to the API's 404.
import { afterEach, describe, expect, it } from "vitest";
import { killChildren, serve } from "../cli/cli-process";

afterEach(() => killChildren());

describe("keyguard serve and the console", () => {
  it("serves the console at / and prints its address", async () => {
    const s = await serve(["--port", "0"]);
    expect(s.output).toContain(`console:      ${s.baseUrl}/`);
    const res = await fetch(`${s.baseUrl}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(await res.text()).toContain("/console/app.js");
    // The root key is printed by the banner, but never in the page.
    expect(await (await fetch(`${s.baseUrl}/console/app.js`)).text()).not.toContain(s.rootKey!);
  });

  it("--no-console: / answers the API's 404 and the banner has no console line", async () => {
    const s = await serve(["--port", "0", "--no-console"]);
    expect(s.output).not.toContain("console:");
    const res = await fetch(`${s.baseUrl}/`);
    expect(res.status).toBe(404);
    expect(res.headers.get("content-security-policy")).toBeNull();
    expect((await fetch(`${s.baseUrl}/v2/liveness`)).status).toBe(200);
  });
});
