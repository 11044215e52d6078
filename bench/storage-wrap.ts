// A store whose verification events go elsewhere (dropped, or switched off and on), every other
// call going to the store itself: the baselines of the benchmarks that measure the cost of events.
import type { Storage } from "keyguard/server";
import { overriding } from "../test/support/storage-wrapper";

export function withAppend(store: Storage, appendVerifications: Storage["appendVerifications"]): Storage {
  return overriding(store, { appendVerifications });
}
