// The error classes: stable codes, retryable by kind, and isKeyServiceError by code.

import { describe, expect, it } from "vitest";
import {
  KeyServiceConfigError,
  KeyServiceError,
  KeyServiceHttpError,
  KeyServiceNetworkError,
  KeyServiceResponseError,
  KeyServiceTimeoutError,
  isKeyServiceError,
} from "keyguard/client";

const http = (status: number) => new KeyServiceHttpError("m", { status, title: "t", detail: "d", type: "about:blank", attempts: 1 });

describe("error classes", () => {
  it("carry stable codes and extend KeyServiceError", () => {
    const errors = [
      http(503),
      new KeyServiceNetworkError("m", { attempts: 1 }),
      new KeyServiceTimeoutError("m", { attempts: 1, timeout: 5, scope: "attempt" }),
      new KeyServiceResponseError("m", { attempts: 1, status: 200 }),
    ];
    expect(errors.map((e) => e.code)).toEqual([
      "KEY_SERVICE_HTTP_ERROR",
      "KEY_SERVICE_NETWORK_ERROR",
      "KEY_SERVICE_TIMEOUT",
      "KEY_SERVICE_INVALID_RESPONSE",
    ]);
    expect(errors.map((e) => e.name)).toEqual([
      "KeyServiceHttpError",
      "KeyServiceNetworkError",
      "KeyServiceTimeoutError",
      "KeyServiceResponseError",
    ]);
    for (const e of errors) expect(e).toBeInstanceOf(KeyServiceError);
  });

  it("HTTP errors are retryable exactly for 502, 503 and 504", () => {
    expect([400, 401, 404, 409, 429, 500, 501, 502, 503, 504, 505].filter((s) => http(s).retryable)).toEqual([502, 503, 504]);
  });

  it("network errors are retryable unless told otherwise; timeouts and bad responses never", () => {
    expect(new KeyServiceNetworkError("m", { attempts: 1 }).retryable).toBe(true);
    expect(new KeyServiceNetworkError("m", { attempts: 1, retryable: false }).retryable).toBe(false);
    expect(new KeyServiceTimeoutError("m", { attempts: 1, timeout: 5, scope: "deadline" }).retryable).toBe(false);
    expect(new KeyServiceResponseError("m", { attempts: 1, status: 200 }).retryable).toBe(false);
  });

  it("omits absent optional fields, so errors compare and serialize cleanly", () => {
    expect(Object.keys(http(404))).not.toContain("kind");
    expect(JSON.parse(JSON.stringify(http(404)))).toEqual({
      name: "KeyServiceHttpError",
      code: "KEY_SERVICE_HTTP_ERROR",
      retryable: false,
      attempts: 1,
      status: 404,
      title: "t",
      detail: "d",
      type: "about:blank",
    });
  });

  it("isKeyServiceError goes by code (works across copies of the package), not instanceof", () => {
    const foreign = Object.assign(new Error("from another copy"), { code: "KEY_SERVICE_TIMEOUT" });
    expect(isKeyServiceError(foreign)).toBe(true);
    expect(isKeyServiceError(http(500))).toBe(true);
    expect(isKeyServiceError(new KeyServiceConfigError("rootKey", "m"))).toBe(false);
    expect(isKeyServiceError(Object.assign(new Error("x"), { code: "ECONNREFUSED" }))).toBe(false);
    expect(isKeyServiceError(null)).toBe(false);
    expect(isKeyServiceError("KEY_SERVICE_TIMEOUT")).toBe(false);
  });
});
