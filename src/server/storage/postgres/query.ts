// What every statement module of the PostgreSQL store is given to run its statements: a transaction's
// client or the pool, behind one function type, so that the statements do not know which.

/** Runs one statement; errors are already turned into `StoreUnavailableError` for outages. */
export type Query = <R>(text: string, params?: readonly unknown[]) => Promise<R[]>;
