// LocalServiceArgumentError: a bad argument passed to the in-process admin surface
// (createApi, createRootKey, setUnavailable, …) at run time, as opposed to a bad start option.

/** A bad argument to an admin method of the local key service. A TypeError with a stable `code`. */
export class LocalServiceArgumentError extends TypeError {
  readonly code = "LOCAL_SERVICE_ARGUMENT_ERROR";
  constructor(message: string) {
    super(message);
    this.name = "LocalServiceArgumentError";
  }
}
