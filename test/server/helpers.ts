// Test helpers for the local key service: a started service with a typed `call` over real HTTP,
// and a settable clock.
import { silentLogger } from "keyguard";
import type { LocalKeyServiceOptions, RunningLocalKeyService } from "keyguard/server";
import { startLocalUnderTest } from "../support/store-under-test";

export interface CallResult {
  status: number;
  headers: Headers;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

export type Call = (op: string, body?: unknown, rootKey?: string | null, init?: RequestInit) => Promise<CallResult>;

export function makeCall(baseUrl: string, defaultRootKey: string): Call {
  return async (op, body = {}, rootKey, init = {}) => {
    const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" };
    const key = rootKey === undefined ? defaultRootKey : rootKey;
    if (key !== null) headers.authorization = `Bearer ${key}`;
    const res = await fetch(`${baseUrl}/v2/${op}`, {
      method: "POST",
      headers,
      body: typeof body === "string" ? body : JSON.stringify(body),
      ...init,
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  };
}

export interface Started extends RunningLocalKeyService {
  call: Call;
  /** Creates a key in the bootstrap API; returns `{keyId, key}`. */
  createKey(body?: Record<string, unknown>): Promise<{ keyId: string; key: string }>;
  verify(key: string, extra?: Record<string, unknown>): Promise<Record<string, unknown>>;
}

export async function start(options: LocalKeyServiceOptions = {}): Promise<Started> {
  const s = await startLocalUnderTest({ logger: silentLogger, ...options });
  const call = makeCall(s.baseUrl, s.rootKey);
  return {
    ...s,
    call,
    async createKey(body = {}) {
      const res = await call("keys.createKey", { apiId: s.apiId, ...body });
      if (res.status !== 200) throw new Error(`createKey failed: ${JSON.stringify(res.body)}`);
      return res.body.data;
    },
    async verify(key, extra = {}) {
      const res = await call("keys.verifyKey", { key, ...extra });
      if (res.status !== 200) throw new Error(`verifyKey failed: ${JSON.stringify(res.body)}`);
      return res.body.data;
    },
  };
}

/** A clock the test moves by hand. */
export function manualClock(start = Date.UTC(2025, 0, 15, 12, 0, 0)) {
  const clock = {
    t: start,
    now: () => clock.t,
    advance(ms: number) {
      clock.t += ms;
    },
  };
  return clock;
}
