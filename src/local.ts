// keyguard/local: the local key service, an in-process implementation of the v2 API.
// Re-exports only.

export type * from "./protocol/types";
export { createLocalKeyService } from "./local/factory";
export type { LocalKeyServiceInstance } from "./local/factory";
export { startLocalKeyService } from "./local/server";
export type { RunningLocalKeyService } from "./local/server";
export type { LocalKeyService, UnavailableOptions } from "./local/service";
export { LocalServiceConfigError } from "./local/options";
export { LocalServiceArgumentError } from "./local/argument-error";
export type { LocalKeyServiceOptions } from "./local/options";
export type { LocalState } from "./local/store";
export { ALL_ROOT_PERMISSIONS } from "./local/auth";
