// The hosted portal's calls: POST /portal/api/<operation>, same origin, with the session's cookie
// (HttpOnly: this script never sees the token). A session that is invalid or has ended (401) sends
// the reader back to the provider's app (GET /portal/return).
import type { ContractOperations } from "../../protocol/types";
import { ApiError } from "../api";

type SessionOperation =
  | "portal.getSession"
  | "portal.listKeys"
  | "portal.rerollKey"
  | "portal.getVerifications"
  | "portal.createKey"
  | "portal.setKeyEnabled"
  | "portal.deleteKey";

export async function portalCall<Op extends SessionOperation>(
  operation: Op,
  body: ContractOperations[Op]["req"],
): Promise<ContractOperations[Op]["res"]> {
  let res: Response;
  try {
    res = await fetch(`/portal/api/${operation}`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify(body),
      credentials: "same-origin",
      cache: "no-store",
    });
  } catch (err) {
    throw new ApiError(0, "Network error", `The service did not answer (${(err as Error).message}).`, "network", undefined);
  }
  const json = (await res.json().catch(() => ({}))) as {
    data?: ContractOperations[Op]["res"];
    meta?: { requestId?: string };
    error?: { title?: string; detail?: string; type?: string };
  };
  if (res.status === 401) {
    location.assign("/portal/return");
    throw new ApiError(401, "Session ended", "Your session has ended.", "session", json.meta?.requestId);
  }
  if (!res.ok || json.error) {
    const e = json.error ?? {};
    throw new ApiError(res.status, e.title ?? `HTTP ${res.status}`, e.detail ?? "No detail given.", e.type ?? "", json.meta?.requestId);
  }
  return json.data as ContractOperations[Op]["res"];
}
