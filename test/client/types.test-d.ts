// Type tests of keyguard/client's public surface: method results, pages, errors, options.

import { describe, expectTypeOf, it } from "vitest";
import {
  createClient,
  isKeyServiceError,
  type AnyKeyServiceError,
  type CallOptions,
  type KeyServiceError,
  type KeyServiceHttpError,
  type KeyServiceNetworkError,
  type KeyServiceResponseError,
  type KeyServiceTimeoutError,
  type KeyServiceClient,
  type KeyInfo,
  type Pagination,
  type Permission,
  type VerifyKeyResult,
  type WithMeta,
} from "keyguard/client";

declare const client: KeyServiceClient;

describe("keyguard/client types", () => {
  it("createClient returns a KeyServiceClient", () => {
    expectTypeOf(createClient).returns.toEqualTypeOf<KeyServiceClient>();
    expectTypeOf(createClient).parameter(0).toMatchTypeOf<{ rootKey?: string; baseUrl?: string } | undefined>();
  });

  it("methods resolve to data with requestId", async () => {
    const v = await client.keys.verifyKey({ key: "k" });
    expectTypeOf(v).toEqualTypeOf<WithMeta<VerifyKeyResult>>();
    expectTypeOf(v.requestId).toEqualTypeOf<string>();
    expectTypeOf(v.valid).toEqualTypeOf<boolean>();
    const deleted = await client.keys.deleteKey({ keyId: "key_1" });
    expectTypeOf(deleted.requestId).toEqualTypeOf<string>();
  });

  it("list methods resolve to pages; listAll yields items", async () => {
    const page = await client.permissions.listPermissions();
    expectTypeOf(page[0]).toEqualTypeOf<Permission | undefined>();
    expectTypeOf(page.pagination).toEqualTypeOf<Pagination>();
    for await (const key of client.apis.listAllKeys({ apiId: "api_1" })) expectTypeOf(key).toEqualTypeOf<KeyInfo>();
    expectTypeOf(client.permissions.ensure).returns.resolves.toEqualTypeOf<string>();
  });

  it("bodies are checked", () => {
    // @ts-expect-error key is required
    void client.keys.verifyKey({});
    // @ts-expect-error apiId is required for listAllKeys
    void client.apis.listAllKeys({});
    void client.keys.createKey({ apiId: "a", remaining: 5, refill: { interval: "daily", amount: 5 } });
    void client.request("keys.getKey", { keyId: "key_1" });
    // @ts-expect-error unknown operation
    void client.request("keys.nope", {});
  });

  it("call options", () => {
    expectTypeOf<CallOptions>().toMatchTypeOf<{ retry?: false | object; signal?: AbortSignal }>();
  });

  it("errors narrow by code", () => {
    const e: unknown = undefined;
    if (isKeyServiceError(e)) {
      expectTypeOf(e).toEqualTypeOf<AnyKeyServiceError>();
      expectTypeOf(e).toMatchTypeOf<KeyServiceError>();
      if (e.code === "KEY_SERVICE_HTTP_ERROR") {
        expectTypeOf(e).toEqualTypeOf<KeyServiceHttpError>();
        expectTypeOf(e.status).toEqualTypeOf<number>();
        expectTypeOf(e.kind).toEqualTypeOf<string | undefined>();
      }
      if (e.code === "KEY_SERVICE_TIMEOUT") expectTypeOf(e.scope).toEqualTypeOf<"attempt" | "deadline">();
      if (e.code === "KEY_SERVICE_NETWORK_ERROR") expectTypeOf(e).toEqualTypeOf<KeyServiceNetworkError>();
      if (e.code === "KEY_SERVICE_INVALID_RESPONSE") expectTypeOf(e).toEqualTypeOf<KeyServiceResponseError>();
    }
    expectTypeOf<KeyServiceTimeoutError["code"]>().toEqualTypeOf<"KEY_SERVICE_TIMEOUT">();
    expectTypeOf<KeyServiceError["code"]>().toEqualTypeOf<string>();
  });
});
