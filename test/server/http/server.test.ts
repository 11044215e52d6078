// startLocalKeyService and createLocalKeyService: options, the bootstrap, the root-key source,
// and a prompt close().
import { randomBytes } from "node:crypto";
import { request as httpRequest, Agent } from "node:http";
import { afterEach, describe, expect, it, vi } from "vitest";
import { silentLogger } from "keyguard";
import { overriding } from "../../support/storage-wrapper";
import {
  ALL_ROOT_PERMISSIONS,
  LocalServiceArgumentError,
  LocalServiceConfigError,
  createLocalKeyService,
  memoryStorage,
  startLocalKeyService,
} from "keyguard/server";

afterEach(() => {
  vi.unstubAllEnvs();
});

describe("startLocalKeyService", () => {
  it("listens on 127.0.0.1 with a bootstrap workspace, API and an all-permissions root key", async () => {
    vi.stubEnv("UNKEY_ROOT_KEY", "");
    const s = await startLocalKeyService({ logger: silentLogger });
    expect(s.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(s.apiId).toMatch(/^api_/);
    expect(s.workspaceId).toMatch(/^ws_/);
    expect(s.rootKey).toMatch(/^root_/);
    expect(s.service.rootKeyGenerated).toBe(true);
    const rootKeys = Object.values((await s.service.exportState()).rootKeys);
    expect(rootKeys).toHaveLength(1);
    expect(rootKeys[0]).toMatchObject({ workspaceId: s.workspaceId, permissions: [...ALL_ROOT_PERMISSIONS] });
    await s.close();
    await s.close(); // twice is fine
    await expect(fetch(`${s.baseUrl}/v2/liveness`)).rejects.toThrow();
  });

  it("root key: options.rootKey, else env UNKEY_ROOT_KEY", async () => {
    vi.stubEnv("UNKEY_ROOT_KEY", "root_fromEnvironment_4f1c9e27b8a35d60e2b7c41f9a0d8e36");
    const fromEnv = await startLocalKeyService({ logger: silentLogger });
    expect(fromEnv.rootKey).toBe("root_fromEnvironment_4f1c9e27b8a35d60e2b7c41f9a0d8e36");
    await fromEnv.close();
    const fromOption = await startLocalKeyService({ logger: silentLogger, rootKey: "root_fromOptions_4f1c9e27b8a35d60e2b7c41f9a0d8e36" });
    expect(fromOption.rootKey).toBe("root_fromOptions_4f1c9e27b8a35d60e2b7c41f9a0d8e36");
    const res = await fetch(`${fromOption.baseUrl}/v2/apis.getApi`, {
      method: "POST",
      headers: { authorization: "Bearer root_fromOptions_4f1c9e27b8a35d60e2b7c41f9a0d8e36", "content-type": "application/json" },
      body: JSON.stringify({ apiId: fromOption.apiId }),
    });
    expect(res.status).toBe(200);
    await fromOption.close();
  });

  it("close() is prompt even with an idle keep-alive connection open", async () => {
    const s = await startLocalKeyService({ logger: silentLogger });
    const agent = new Agent({ keepAlive: true });
    await new Promise<void>((resolve, reject) => {
      const req = httpRequest(`${s.baseUrl}/v2/liveness`, { agent }, (res) => {
        res.resume();
        res.on("end", resolve);
      });
      req.on("error", reject);
      req.end();
    });
    vi.useFakeTimers({ toFake: ["setTimeout"] });
    try {
      // Resolves without any timer having to fire: idle sockets are closed at once.
      await s.close();
    } finally {
      vi.useRealTimers();
      agent.destroy();
    }
  });

  it("fails fast on bad options, naming the option and the fix", async () => {
    await expect(startLocalKeyService({ port: -1 })).rejects.toThrow(/port = -1.*0\.\.65535/);
    await expect(createLocalKeyService({ now: 5 as unknown as () => number })).rejects.toThrow(LocalServiceConfigError);
    await expect(createLocalKeyService({ rootKey: "a b" })).rejects.toThrow(/rootKey/);
    await expect(createLocalKeyService({ rootKey: "a b" })).rejects.not.toThrow(/a b/);
  });

  it("refuses a root key no client can send: 8..512 visible ASCII characters, never echoed", async () => {
    const refused = ["root_ключ_12345", "root_tab\there", "root_é_12345678", "short7!", "x".repeat(513), "root_\u007f_12345"];
    for (const rootKey of refused) {
      const err = await createLocalKeyService({ rootKey, logger: silentLogger }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, JSON.stringify(rootKey)).toBeInstanceOf(LocalServiceConfigError);
      expect((err as Error).message).toBe(
        "keyguard/server: invalid option rootKey = <hidden>. Use 8..512 visible ASCII characters (no spaces, control or non-ASCII characters), or leave it unset to generate one.",
      );
    }
    vi.stubEnv("UNKEY_ROOT_KEY", "root_ключ_12345");
    await expect(createLocalKeyService({ logger: silentLogger })).rejects.toThrow(
      /^keyguard\/server: invalid option UNKEY_ROOT_KEY = <hidden>\. Use 8\.\.512 visible ASCII/,
    );
    vi.unstubAllEnvs();
    // At least 128 bits of estimated entropy too (test/server/domain/root-key-strength.test.ts).
    for (const rootKey of [
      "root_!~{}12_4f1c9e27b8a35d60e2b7c41f9a0d8e36",
      "r".repeat(4) + randomBytes(381).toString("base64").slice(0, 508),
    ]) {
      const instance = await createLocalKeyService({ rootKey, logger: silentLogger });
      expect(instance.service.rootKey).toBe(rootKey);
      await instance.close();
    }
    await expect(createLocalKeyService({ dataFile: " " })).rejects.toThrow(/dataFile/);
    await expect(createLocalKeyService({ logger: {} as never })).rejects.toThrow(/logger/);
    await expect(createLocalKeyService({ storage: {} as never })).rejects.toThrow(
      /invalid option storage = an object\. It is not a Storage \(transaction, direct, close\)\. .*memoryStorage\(\)/,
    );
    await expect(createLocalKeyService({ storage: memoryStorage(), dataFile: "x.json" })).rejects.toThrow(/either dataFile or storage/);
  });

  it("a config error names its option as a field, the same option the message names", async () => {
    const optionOf = (options: object) =>
      createLocalKeyService({ logger: silentLogger, ...options }).then(
        () => "did not throw",
        (e: unknown) => (e instanceof LocalServiceConfigError ? e.option : String(e)),
      );
    expect(await optionOf({ storage: {} })).toBe("storage");
    expect(await optionOf({ store: {} })).toBe("store");
    expect(await optionOf({ port: 70_000 })).toBe("port");
    expect(await optionOf({ encryptionKey: "not a key" })).toBe("encryptionKey");
    expect(await optionOf({ metrics: { token: "short" } })).toBe("metrics.token");
    expect(await optionOf({ metrics: { tokn: "x" } })).toBe("metrics.tokn");
    expect(await optionOf({ redis: "redis://127.0.0.1:6379" })).toBe("redis");
    expect(new LocalServiceConfigError("keyguard/server: a data file of another program.").option).toBe("options");
  });

  it("refuses unknown option names, with the name meant: a misspelled rootKey must not leave a random one", async () => {
    const logger = { warn: vi.fn(), error: vi.fn() };
    const err = await createLocalKeyService({ logger, rootkey: "x" } as never).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LocalServiceConfigError);
    expect((err as LocalServiceConfigError).option).toBe("rootkey");
    expect((err as Error).message).toMatch(/unknown option rootkey \(did you mean rootKey\?\)/);
    expect(logger.warn).not.toHaveBeenCalled();
  });
});

describe("admin surface", () => {
  it("createApi and createRootKey default to the bootstrap workspace; unknown workspaces reject", async () => {
    const { service } = await createLocalKeyService({ logger: silentLogger });
    const { apiId } = await service.createApi({ name: "x" });
    expect((await service.exportState()).apis[apiId]).toMatchObject({ workspaceId: service.workspaceId, name: "x" });
    await expect(service.createApi({ workspaceId: "ws_nope", name: "x" })).rejects.toThrow(/unknown workspace "ws_nope"/);
    await expect(service.createRootKey({ workspaceId: "ws_nope", permissions: [] })).rejects.toThrow(LocalServiceArgumentError);
    await expect(service.createApi({ name: "" })).rejects.toThrow(LocalServiceArgumentError);
    expect(() => service.setUnavailable({ retryAfter: -1 })).toThrow(LocalServiceArgumentError);
    const thrown = await service.createApi({ workspaceId: "ws_nope", name: "x" }).catch((err: unknown) => err);
    expect(thrown).toMatchObject({ name: "LocalServiceArgumentError", code: "LOCAL_SERVICE_ARGUMENT_ERROR" });
    expect(thrown).toBeInstanceOf(TypeError);
    const { workspaceId } = await service.createWorkspace({ name: "w" });
    expect((await service.exportState()).workspaces[workspaceId]).toMatchObject({ name: "w" });
  });

  it("the clock is injectable and read through service.now()", async () => {
    const { service } = await createLocalKeyService({ logger: silentLogger, now: () => 1234 });
    expect(service.now()).toBe(1234);
    const { apiId } = await service.createApi({ name: "t" });
    expect((await service.exportState()).apis[apiId]!.createdAt).toBe(1234);
  });
});

describe("the store option", () => {
  it("uses a given store, keeps the bootstrap in it and never closes it", async () => {
    const inner = memoryStorage();
    let closed = 0;
    const store = overriding(inner, {
      close: async () => {
        closed++;
      },
    });
    const a = await startLocalKeyService({
      storage: store,
      logger: silentLogger,
      rootKey: "root_givenStore1_4f1c9e27b8a35d60e2b7c41f9a0d8e36",
    });
    expect(a.service.restored).toBe(false);
    await a.close();
    const b = await createLocalKeyService({ store, logger: silentLogger, rootKey: "root_givenStore1_4f1c9e27b8a35d60e2b7c41f9a0d8e36" }); // the former name of `storage` still works;
    expect(b.service.restored).toBe(true);
    expect([b.service.workspaceId, b.service.apiId]).toEqual([a.workspaceId, a.apiId]);
    await b.close();
    expect(closed).toBe(0);
    expect(Object.keys((await b.service.exportState()).rootKeys)).toHaveLength(1);
  });
});
