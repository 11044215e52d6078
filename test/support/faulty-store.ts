// A Storage wrapper that injects faults a real backend cannot produce on demand: before each call
// (`transaction` or any StorageTx method, on `direct` or inside a transaction) it asks `fault` whether
// to fail it, and rejects with that error instead of calling the store.
import type { Storage, StorageTx } from "keyguard/server";

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
  return {
    kind: `faulty ${inner.kind}`,
    direct: wrapTx(inner.direct, fault),
    transaction<T>(fn: (tx: StorageTx) => Promise<T>): Promise<T> {
      const err = fault("transaction", []);
      return err ? Promise.reject(err) : inner.transaction((tx) => fn(wrapTx(tx, fault)));
    },
    appendVerifications(events) {
      const err = fault("appendVerifications", [events]);
      return err ? Promise.reject(err) : inner.appendVerifications(events);
    },
    deleteVerificationsBefore(before) {
      const err = fault("deleteVerificationsBefore", [before]);
      return err ? Promise.reject(err) : inner.deleteVerificationsBefore(before);
    },
    queryVerifications(plan, scope) {
      const err = fault("queryVerifications", [plan, scope]);
      return err ? Promise.reject(err) : inner.queryVerifications(plan, scope);
    },
    close: () => inner.close(),
  };
}
