// keyguard/client: the typed client for the key service's v2 operations.
// Re-exports only.

export type * from "./protocol/types";
