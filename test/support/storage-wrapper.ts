// A store with some of its calls replaced, for tests and benchmarks that wrap a real backend (a
// cleanup on close, calls timed, events dropped, faults injected): every other property and call
// goes to the store itself, bound to it, so a call added to the storage seam needs no change here.
import type { Storage } from "keyguard/server";

export function overriding(store: Storage, overrides: Partial<Storage>): Storage {
  return new Proxy(store, {
    get(target, name) {
      if (Object.hasOwn(overrides, name)) return overrides[name as keyof Storage];
      const value: unknown = Reflect.get(target, name);
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
