// The service's public HTTP API, as any client calls it: POST /v2/<operation> with the root key
// from this tab's sessionStorage. Every error keeps its `detail`; a 403 is a refusal. Calls are typed
// by operation name: the body and the answer's `data` are the contract's for that operation.
import type { ContractOperations, Pagination } from "../protocol/types";

const STORAGE_KEY = "keyguard.rootKey";

export function rootKey(): string | null {
  return sessionStorage.getItem(STORAGE_KEY);
}
export function signIn(key: string): void {
  sessionStorage.setItem(STORAGE_KEY, key);
}
export function signOut(): void {
  sessionStorage.removeItem(STORAGE_KEY);
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly detail: string,
    readonly type: string,
    readonly requestId: string | undefined,
    /** A validation error's fields: where, what, and how to fix it. */
    readonly errors: ReadonlyArray<{ location?: string; message?: string; fix?: string }> = [],
  ) {
    super(detail);
  }
  /** The root key may not do this (authorization.insufficient_permissions). */
  get refused(): boolean {
    return this.status === 403;
  }
}

/** An operation of the service, by wire name (`group.operation`). */
type OperationName = keyof ContractOperations;
/** An operation's request body, as the contract gives it. */
export type Body<Op extends OperationName> = ContractOperations[Op]["req"];
/** An operation's answer `data`, as the contract gives it. */
type Data<Op extends OperationName> = ContractOperations[Op]["res"];
/** The operations answered a page at a time: their body takes a `cursor`. */
type ListName = { [Op in OperationName]: "cursor" extends keyof Body<Op> ? Op : never }[OperationName];
/** One item of a list operation's answer. */
type Item<Op extends OperationName> = Data<Op> extends ReadonlyArray<infer I> ? I : never;

export interface Answer<T> {
  data: T;
  pagination?: Pagination;
}

/** Calls one operation; throws ApiError with the service's title and detail. */
export async function call<Op extends OperationName>(operation: Op, body: Body<Op>, key = rootKey()): Promise<Answer<Data<Op>>> {
  let res: Response;
  try {
    res = await fetch(`/v2/${operation}`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json", Authorization: `Bearer ${key ?? ""}` },
      body: JSON.stringify(body),
      cache: "no-store",
    });
  } catch (err) {
    throw new ApiError(
      0,
      "Network error",
      `The key service did not answer (${(err as Error).message}). Is it still running?`,
      "network",
      undefined,
    );
  }
  const text = await res.text();
  let json: {
    meta?: { requestId?: string };
    data?: Data<Op>;
    pagination?: Pagination;
    error?: { title?: string; detail?: string; type?: string; errors?: Array<{ location?: string; message?: string; fix?: string }> };
  };
  try {
    json = JSON.parse(text);
  } catch {
    throw new ApiError(
      res.status,
      `HTTP ${res.status}`,
      `The service answered something that is not JSON: ${text.slice(0, 200)}`,
      "invalid",
      undefined,
    );
  }
  if (!res.ok || json.error) {
    const e = json.error ?? {};
    const err = new ApiError(
      res.status,
      e.title ?? `HTTP ${res.status}`,
      e.detail ?? "No detail given.",
      e.type ?? "",
      json.meta?.requestId,
      Array.isArray(e.errors) ? e.errors : [],
    );
    // The signed-in root key stopped working (deleted): back to the sign-in form, saying why.
    if (res.status === 401 && key !== null && key === rootKey()) {
      signOut();
      window.dispatchEvent(new CustomEvent("keyguard:signed-out", { detail: err }));
    }
    throw err;
  }
  return { data: json.data as Data<Op>, ...(json.pagination ? { pagination: json.pagination } : {}) };
}

/** Every page of a list operation (at most `pages` pages of 100), in order. */
export async function callAll<Op extends ListName>(
  operation: Op,
  body?: Omit<Body<Op>, "cursor" | "limit">,
  pages = 10,
): Promise<Array<Item<Op>>> {
  const out: Array<Item<Op>> = [];
  let cursor: string | undefined;
  for (let page = 0; page < pages; page++) {
    const { data, pagination } = await call(operation, { ...body, limit: 100, ...(cursor ? { cursor } : {}) } as Body<Op>);
    out.push(...(data as unknown as ReadonlyArray<Item<Op>>));
    if (!pagination?.hasMore) break;
    cursor = pagination.cursor;
  }
  return out;
}
