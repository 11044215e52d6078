// keyguard/local: the local key service, an in-process implementation of the v2 API.
// Re-exports only.

export type * from "./protocol/types";
