// The fields of a key, for creating one (keys.createKey) and editing one (keys.updateKey): name,
// prefix and recoverable (create only), owner (an identity's externalId), expiry, credits and refill,
// the credits-low webhook threshold (the key's own, over its API's), named rate limits,
// permissions, roles and meta as JSON checked before sending.
import type { CreateKeyRequest, KeyCredits, KeyWithSettings, RefillInterval, UpdateKeyRequest } from "../../protocol/types";
import { field, h } from "../dom";
import { metaInput, ratelimitsInput } from "../inputs";
import { list } from "../ui";

/** What the form gives: the fields keys.updateKey takes, with the prefix (create only) and credits as both operations take them. */
export type KeyFields = Pick<
  UpdateKeyRequest,
  "name" | "externalId" | "expires" | "ratelimits" | "permissions" | "roles" | "meta" | "creditsLowThreshold"
> &
  Pick<CreateKeyRequest, "prefix" | "recoverable"> & { credits?: KeyCredits | null };

/** The contract's refill intervals (a record, so that one added to the contract fails the typecheck here). */
const REFILL_INTERVALS: Record<RefillInterval, true> = { daily: true, monthly: true };

/** `Date` → the value of an <input type=datetime-local> in local time. */
function localInput(ms: number): string {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60_000);
  return d.toISOString().slice(0, 16);
}

export function keyForm(initial?: KeyWithSettings): { element: HTMLElement; read(): KeyFields | string } {
  const editing = initial !== undefined;
  const name = h("input", { name: "name", maxlength: 255, value: initial?.name ?? "" });
  const prefix = h("input", { name: "prefix", maxlength: 16, pattern: "[A-Za-z0-9_]*", value: "" });
  const expires = h("input", { name: "expires", type: "datetime-local", value: initial?.expires ? localInput(initial.expires) : "" });
  const remaining = h("input", { name: "remaining", type: "number", min: 0, step: 1, value: initial?.credits?.remaining ?? "" });
  const interval = h(
    "select",
    { name: "refillInterval" },
    h("option", { value: "" }, "no refill"),
    Object.keys(REFILL_INTERVALS).map((value) => h("option", { value }, value)),
  );
  interval.value = initial?.credits?.refill?.interval ?? "";
  const amount = h("input", { name: "refillAmount", type: "number", min: 1, step: 1, value: initial?.credits?.refill?.amount ?? "" });
  const refillDay = h("input", {
    name: "refillDay",
    type: "number",
    min: 1,
    max: 31,
    step: 1,
    value: initial?.credits?.refill?.refillDay ?? "",
  });
  const lowAt = h("input", { name: "creditsLowThreshold", type: "number", min: 1, step: 1, value: initial?.creditsLowThreshold ?? "" });
  const owner = h("input", { name: "externalId", maxlength: 255, value: initial?.identity?.externalId ?? "" });
  const ratelimits = ratelimitsInput(initial?.ratelimits);
  const permissions = h("input", { name: "permissions", value: (initial?.permissions ?? []).join(", ") });
  const roles = h("input", { name: "roles", value: (initial?.roles ?? []).join(", ") });
  const meta = metaInput(initial?.meta);
  const recoverable = h("input", { name: "recoverable", type: "checkbox", id: "key-recoverable" });

  const element = h(
    "div",
    { class: "grid" },
    field("Name", name),
    editing ? null : field("Prefix", prefix, "Letters, digits, _; the key starts with prefix_"),
    editing
      ? null
      : h(
          "div",
          { class: "check" },
          recoverable,
          h(
            "label",
            { for: "key-recoverable" },
            "Recoverable: the service keeps an encrypted copy (the API must store keys; needs the service's encryption key)",
          ),
        ),
    field("Expires", expires, "Empty: never"),
    field("Credits", remaining, "Uses left; empty: unlimited"),
    field("Refill", interval),
    field("Refill amount", amount),
    field("Refill day (monthly)", refillDay),
    field("Credits low at", lowAt, "key.credits_low webhook when the credits drop to this; empty: the API's setting"),
    field("Owner (identity externalId)", owner, "Empty: no identity"),
    field("Permissions", permissions, "Comma-separated slugs, e.g. docs.read, docs.write"),
    field("Roles", roles, "Comma-separated role names"),
    h("fieldset", { class: "wide" }, h("legend", {}, "Rate limits"), ratelimits.element),
    meta.element,
  );

  const read = (): KeyFields | string => {
    const out: KeyFields = {};
    const n = name.value.trim();
    if (n) out.name = n;
    else if (editing && initial?.name) out.name = null;
    if (!editing && prefix.value.trim()) {
      if (!/^[A-Za-z0-9_]{1,16}$/.test(prefix.value.trim())) return "Prefix: use 1 to 16 letters, digits or _.";
      out.prefix = prefix.value.trim();
    }
    if (!editing && recoverable.checked) out.recoverable = true;
    if (expires.value) {
      const ms = new Date(expires.value).getTime();
      if (!Number.isFinite(ms)) return "Expires: not a date.";
      out.expires = ms;
    } else if (editing && initial?.expires) out.expires = null;
    if (remaining.value !== "") {
      const r = Number(remaining.value);
      if (!Number.isInteger(r) || r < 0) return "Credits: a whole number, 0 or more.";
      out.credits = { remaining: r };
      if (interval.value) {
        const a = Number(amount.value);
        if (!Number.isInteger(a) || a < 1) return "Refill amount: a whole number, 1 or more.";
        const refill: NonNullable<NonNullable<KeyFields["credits"]>["refill"]> = {
          interval: interval.value as RefillInterval,
          amount: a,
        };
        if (interval.value === "monthly") {
          const d = Number(refillDay.value || "1");
          if (!Number.isInteger(d) || d < 1 || d > 31) return "Refill day: 1 to 31.";
          refill.refillDay = d;
        }
        out.credits.refill = refill;
      }
    } else if (interval.value) return "Refill: set the credits too (a refill needs a limited balance).";
    else if (editing && initial?.credits) out.credits = null;
    if (lowAt.value.trim() !== "") {
      const t = Number(lowAt.value);
      if (!Number.isInteger(t) || t < 1) return "Credits low at: a whole number, 1 or more.";
      if (t !== initial?.creditsLowThreshold) out.creditsLowThreshold = t;
    } else if (editing && initial?.creditsLowThreshold !== undefined) out.creditsLowThreshold = null;
    const rls = ratelimits.read();
    if (typeof rls === "string") return rls;
    if (rls.length > 0 || (editing && (initial?.ratelimits?.length ?? 0) > 0)) out.ratelimits = rls;
    const o = owner.value.trim();
    if (o) {
      if (!/^[A-Za-z0-9_.-]{1,255}$/.test(o)) return "Owner: letters, digits and _ . - only (an identity's externalId).";
      if (o !== initial?.identity?.externalId) out.externalId = o;
    } else if (editing && initial?.identity) out.externalId = null;
    const perms = list(permissions.value);
    if (perms.length > 0 || editing) out.permissions = perms;
    const roleList = list(roles.value);
    if (roleList.length > 0 || editing) out.roles = roleList;
    const m = meta.read();
    if (typeof m === "string") return m;
    if (m) out.meta = m;
    else if (editing && initial?.meta) out.meta = null;
    return out;
  };
  return { element, read };
}
