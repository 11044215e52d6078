// A Storage that times each call into the service's metrics (`keyguard_store_duration_seconds`) and
// counts the failed ones (`keyguard_store_errors_total`): wraps whatever backend runs under the
// seam, once, so no backend knows about metrics.
import type { ServiceMetrics, StoreErrorKind } from "../metrics";
import { RunAgain, type Storage, type StorageTx, type TransactionOptions } from "./seam";
import { isStoreUnavailable } from "./store-failures";

/** Every StorageTx call: the compiler checks the list against the interface. */
const CALLS = Object.keys({
  get: true,
  keyByHash: true,
  rootKeyByHash: true,
  find: true,
  list: true,
  sortedKeys: true,
  put: true,
  delete: true,
  spendCredits: true,
  limit: true,
  dropCounters: true,
  getMeta: true,
  setMeta: true,
  lastUsed: true,
  markUsed: true,
  appendAudit: true,
  listAudit: true,
  enqueueWebhooks: true,
  rescheduleWebhooks: true,
  claimExpiryNotices: true,
} satisfies Record<keyof StorageTx, true>) as Array<keyof StorageTx>;

const kindOf = (err: unknown): StoreErrorKind => (isStoreUnavailable(err) ? "unavailable" : "unexpected");

type Call = (...args: unknown[]) => Promise<unknown>;

/** `call` timed and counted as the store call `name`; an error is marked as counted in `failed`. */
function meteredCall(name: string, call: Call, metrics: ServiceMetrics, failed: WeakSet<object>): Call {
  const observe = metrics.storeCall(name);
  return (...args) => {
    const start = performance.now();
    return call(...args).then(
      (value) => {
        observe(performance.now() - start);
        return value;
      },
      (err: unknown) => {
        // An attempt given up to run again is no failure (the call's time is still its time).
        if (err instanceof RunAgain) {
          observe(performance.now() - start);
          throw err;
        }
        observe(performance.now() - start, kindOf(err));
        // Counted here: the transaction it fails does not count it again.
        if (typeof err === "object" && err !== null) failed.add(err);
        throw err;
      },
    );
  };
}

function meteredTx(tx: StorageTx, metrics: ServiceMetrics, failed: WeakSet<object>): StorageTx {
  const metered: Record<string, Call> = {};
  for (const name of CALLS) metered[name] = meteredCall(name, (tx[name] as Call).bind(tx), metrics, failed);
  return metered as unknown as StorageTx;
}

export function meteredStore(store: Storage, metrics: ServiceMetrics): Storage {
  const failed = new WeakSet<object>();
  const observe = metrics.storeCall("transaction");
  return {
    kind: store.kind,
    direct: meteredTx(store.direct, metrics, failed),
    ...(store.ping && { ping: () => store.ping!() }),
    async transaction<T>(fn: (tx: StorageTx) => Promise<T>, options?: TransactionOptions): Promise<T> {
      const start = performance.now();
      // What the operation itself threw (its own refusal, or a store call's error counted above).
      let thrown: { err: unknown } | undefined;
      try {
        const value = await store.transaction(async (tx) => {
          try {
            return await fn(meteredTx(tx, metrics, failed));
          } catch (err) {
            thrown = { err };
            throw err;
          }
        }, options);
        observe(performance.now() - start);
        return value;
      } catch (err) {
        // The store's own failure (begin, lock, commit) is counted; an operation's refusal is not.
        const ownFailure = thrown?.err !== err && !(typeof err === "object" && err !== null && failed.has(err));
        observe(performance.now() - start, ownFailure ? kindOf(err) : undefined);
        throw err;
      }
    },
    // The verification events' batch writes, retention sweeps and analytics queries.
    appendVerifications: meteredCall(
      "appendVerifications",
      store.appendVerifications.bind(store) as Call,
      metrics,
      failed,
    ) as Storage["appendVerifications"],
    deleteVerificationsBefore: meteredCall(
      "deleteVerificationsBefore",
      store.deleteVerificationsBefore.bind(store) as Call,
      metrics,
      failed,
    ) as Storage["deleteVerificationsBefore"],
    queryVerifications: meteredCall(
      "queryVerifications",
      store.queryVerifications.bind(store) as Call,
      metrics,
      failed,
    ) as Storage["queryVerifications"],
    // The counts of ratelimit.limit outcomes (written with the events) and their reads.
    addRatelimitCounts: meteredCall(
      "addRatelimitCounts",
      store.addRatelimitCounts.bind(store) as Call,
      metrics,
      failed,
    ) as Storage["addRatelimitCounts"],
    ratelimitCounts: meteredCall(
      "ratelimitCounts",
      store.ratelimitCounts.bind(store) as Call,
      metrics,
      failed,
    ) as Storage["ratelimitCounts"],
    // The audit log's retention sweeps (its appends and reads are StorageTx calls).
    deleteAuditBefore: meteredCall(
      "deleteAuditBefore",
      store.deleteAuditBefore.bind(store) as Call,
      metrics,
      failed,
    ) as Storage["deleteAuditBefore"],
    // The audit chain's check (keyguard audit verify).
    auditHeads: meteredCall("auditHeads", store.auditHeads.bind(store) as Call, metrics, failed) as Storage["auditHeads"],
    readAuditChain: meteredCall("readAuditChain", store.readAuditChain.bind(store) as Call, metrics, failed) as Storage["readAuditChain"],
    // The webhook outbox's deliveries (its appends are StorageTx calls).
    claimWebhooks: meteredCall("claimWebhooks", store.claimWebhooks.bind(store) as Call, metrics, failed) as Storage["claimWebhooks"],
    settleWebhook: meteredCall("settleWebhook", store.settleWebhook.bind(store) as Call, metrics, failed) as Storage["settleWebhook"],
    getWebhook: meteredCall("getWebhook", store.getWebhook.bind(store) as Call, metrics, failed) as Storage["getWebhook"],
    listWebhooks: meteredCall("listWebhooks", store.listWebhooks.bind(store) as Call, metrics, failed) as Storage["listWebhooks"],
    close: () => store.close(),
    ...(store.appendBatchSize !== undefined && { appendBatchSize: store.appendBatchSize }),
  };
}
