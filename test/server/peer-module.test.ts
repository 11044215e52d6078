// Optional peer dependencies of the storage backends: loaded on demand, with an error naming the
// package to install when it is missing.
import { describe, expect, it } from "vitest";
import { LocalServiceConfigError } from "../../src/server/errors";
import { loadPeer } from "../../src/server/peer-module";

describe("loadPeer", () => {
  it("loads an installed package, unwrapping a CommonJS default export", async () => {
    const pg = await loadPeer<{ Pool: unknown }>("pg", "the PostgreSQL store", () => import("pg"));
    expect(typeof pg.Pool).toBe("function");
  });

  it("names the package to install when it is missing", async () => {
    const missing = "keyguard-no-such-package";
    const err = await loadPeer("pg", "the PostgreSQL store (postgres option, --postgres)", () => import(/* @vite-ignore */ missing)).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(LocalServiceConfigError);
    expect((err as Error).message).toBe(
      'keyguard/server: the PostgreSQL store (postgres option, --postgres) needs the package "pg". Install it with: npm install pg',
    );
  });

  it("passes other load errors through", async () => {
    const boom = new SyntaxError("bad module");
    await expect(loadPeer("pg", "x", () => Promise.reject(boom))).rejects.toBe(boom);
  });
});
