// A Storage wrapper that injects faults a real backend cannot produce on demand: before each call
// (`transaction` or any StorageTx method, on `direct` or inside a transaction) it asks `fault` whether
// to fail it, and rejects with that error instead of calling the store.
import type { Storage, StorageTx, TransactionOptions } from "keyguard/server";
import { overriding } from "./storage-wrapper";

/** Which call to fail: return the error to reject with, or undefined to let the call through. */
export type FaultPlan = (call: string, args: unknown[]) => Error | undefined;

function wrapTx(tx: StorageTx, fault: FaultPlan): StorageTx {
  return new Proxy(tx, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        const err = fault(String(prop), args);
        return err ? Promise.reject(err) : (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

export function faultyStore(inner: Storage, fault: FaultPlan): Storage {
  // Every call of the store is asked about first, but close (a test's teardown).
  const calls: Partial<Storage> = {};
  for (const name of [
    "appendVerifications",
    "deleteVerificationsBefore",
    "queryVerifications",
    "deleteAuditBefore",
    "claimWebhooks",
    "settleWebhook",
    "getWebhook",
    "listWebhooks",
  ] as const) {
    const call = (inner[name] as (...a: unknown[]) => Promise<unknown>).bind(inner);
    (calls as Record<string, unknown>)[name] = (...args: unknown[]) => {
      const err = fault(name, args);
      return err ? Promise.reject(err) : call(...args);
    };
  }
  return overriding(inner, {
    ...calls,
    kind: `faulty ${inner.kind}`,
    direct: wrapTx(inner.direct, fault),
    transaction<T>(fn: (tx: StorageTx) => Promise<T>, options?: TransactionOptions): Promise<T> {
      const err = fault("transaction", []);
      return err ? Promise.reject(err) : inner.transaction((tx) => fn(wrapTx(tx, fault)), options);
    },
  });
}
