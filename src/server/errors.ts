// The key service's error classes, the bottom of src/server: every folder throws them, none of them
// imports anything of the service. ServiceError is answered as an error envelope; the others are
// thrown to the program that starts or administers the service.
import { ConfigError, type ConfigErrorDetails } from "../config-error";
import { optionChecks, type OptionChecks } from "../option-checks";
import { ERROR_CATALOG, type ErrorKind } from "../protocol/errors";
import type { ValidationErrorDetail } from "../protocol/types";

/** A failure to answer with an error envelope. Thrown by handlers, turned into a response by the app. */
export class ServiceError extends Error {
  readonly code = "LOCAL_SERVICE_ERROR";
  readonly kind: ErrorKind;
  readonly status: number;
  readonly detail: string;
  readonly errors?: ValidationErrorDetail[];
  readonly headers: Readonly<Record<string, string>>;

  constructor(kind: ErrorKind, detail: string, extra: { errors?: ValidationErrorDetail[]; headers?: Record<string, string> } = {}) {
    super(detail);
    this.name = "ServiceError";
    this.kind = kind;
    this.status = ERROR_CATALOG[kind].status;
    this.detail = detail;
    if (extra.errors) this.errors = extra.errors;
    this.headers = Object.freeze({ ...extra.headers });
  }
}

/**
 * A bad option given to the local key service (or to one of its stores), or a data file it cannot
 * use. `option` names the option (or environment variable) at fault; `"options"` when the fault is
 * not one option's (e.g. a data file of another program).
 */
export class LocalServiceConfigError extends ConfigError {
  override readonly name: string = "LocalServiceConfigError";
  override readonly code: string = "LOCAL_SERVICE_CONFIG_ERROR";
  constructor(message: string, details: { readonly option?: string } & ConfigErrorDetails = {}) {
    super(details.option ?? "options", message, details);
  }
}

/** The checks of the service's options and of its stores' (each store names itself). */
export function serviceChecks(where = "keyguard/server"): OptionChecks {
  return optionChecks(where, (option, message, details) => new LocalServiceConfigError(message, { ...details, option }));
}

/** A bad argument to an admin method of the local key service. A TypeError with a stable `code`. */
export class LocalServiceArgumentError extends TypeError {
  readonly code = "LOCAL_SERVICE_ARGUMENT_ERROR";
  constructor(message: string) {
    super(message);
    this.name = "LocalServiceArgumentError";
  }
}

/** The store cannot serve now (database down, disk full, read-only file): answered 503, retried by callers. */
export class StoreUnavailableError extends Error {
  readonly code = "STORE_UNAVAILABLE";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "StoreUnavailableError";
  }
}
