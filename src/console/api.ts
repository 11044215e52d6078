// The service's public HTTP API, as any client calls it: POST /v2/<operation> with the root key
// from this tab's sessionStorage. Every error keeps its `detail`; a 403 is a refusal.
import type { Pagination } from "../protocol/types";

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

export interface Answer<T> {
  data: T;
  pagination?: Pagination;
}

/** Calls one operation; throws ApiError with the service's title and detail. */
export async function call<T>(operation: string, body: unknown = {}, key = rootKey()): Promise<Answer<T>> {
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
    data?: T;
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
  return { data: json.data as T, ...(json.pagination ? { pagination: json.pagination } : {}) };
}

/** Every page of a list operation (at most `pages` pages of 100), in order. */
export async function callAll<T>(operation: string, body: Record<string, unknown> = {}, pages = 10): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < pages; page++) {
    const { data, pagination } = await call<T[]>(operation, { ...body, limit: 100, ...(cursor ? { cursor } : {}) });
    out.push(...data);
    if (!pagination?.hasMore) break;
    cursor = pagination.cursor;
  }
  return out;
}
