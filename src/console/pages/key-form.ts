// The fields of a key, for creating one (keys.createKey) and editing one (keys.updateKey): name,
// prefix (create only), expiry, credits and refill, one rate limit, permissions, roles and meta as
// JSON checked before sending.
import type { CreateKeyRequest, KeyCredits, KeyInfo, UpdateKeyRequest } from "../../protocol/types";
import { field, h } from "../dom";
import { list } from "../ui";

/** What the form gives: the fields keys.updateKey takes, with the prefix (create only) and credits as both operations take them. */
export type KeyFields = Pick<UpdateKeyRequest, "name" | "expires" | "ratelimits" | "permissions" | "roles" | "meta"> &
  Pick<CreateKeyRequest, "prefix"> & { credits?: KeyCredits | null };

/** `Date` → the value of an <input type=datetime-local> in local time. */
function localInput(ms: number): string {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60_000);
  return d.toISOString().slice(0, 16);
}

export function keyForm(initial?: KeyInfo): { element: HTMLElement; read(): KeyFields | string } {
  const editing = initial !== undefined;
  const name = h("input", { name: "name", maxlength: 255, value: initial?.name ?? "" });
  const prefix = h("input", { name: "prefix", maxlength: 16, pattern: "[A-Za-z0-9_]*", value: "" });
  const expires = h("input", { name: "expires", type: "datetime-local", value: initial?.expires ? localInput(initial.expires) : "" });
  const remaining = h("input", { name: "remaining", type: "number", min: 0, step: 1, value: initial?.credits?.remaining ?? "" });
  const interval = h(
    "select",
    { name: "refillInterval" },
    h("option", { value: "" }, "no refill"),
    h("option", { value: "daily" }, "daily"),
    h("option", { value: "monthly" }, "monthly"),
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
  const rl = initial?.ratelimits?.[0];
  const rlName = h("input", { name: "ratelimitName", value: rl?.name ?? "" });
  const rlLimit = h("input", { name: "ratelimitLimit", type: "number", min: 1, step: 1, value: rl?.limit ?? "" });
  const rlDuration = h("input", { name: "ratelimitDuration", type: "number", min: 1000, step: 1000, value: rl?.duration ?? "" });
  const permissions = h("input", { name: "permissions", value: (initial?.permissions ?? []).join(", ") });
  const roles = h("input", { name: "roles", value: (initial?.roles ?? []).join(", ") });
  const meta = h("textarea", { name: "meta", rows: 3, spellcheck: "false" });
  meta.value = initial?.meta ? JSON.stringify(initial.meta, null, 2) : "";

  const element = h(
    "div",
    { class: "grid" },
    field("Name", name),
    editing ? null : field("Prefix", prefix, "Letters, digits, _; the key starts with prefix_"),
    field("Expires", expires, "Empty: never"),
    field("Credits", remaining, "Uses left; empty: unlimited"),
    field("Refill", interval),
    field("Refill amount", amount),
    field("Refill day (monthly)", refillDay),
    field("Rate limit name", rlName, "e.g. requests; empty: no rate limit"),
    field("Rate limit: requests", rlLimit),
    field("Rate limit: window (ms)", rlDuration),
    field("Permissions", permissions, "Comma-separated slugs, e.g. docs.read, docs.write"),
    field("Roles", roles, "Comma-separated role names"),
    field("Meta (JSON object)", meta, 'e.g. {"plan": "pro"}'),
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
          interval: interval.value as "daily" | "monthly",
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
    if (rlName.value.trim()) {
      const limit = Number(rlLimit.value);
      const duration = Number(rlDuration.value);
      if (rlName.value.trim().length < 3) return "Rate limit name: at least 3 characters.";
      if (!Number.isInteger(limit) || limit < 1) return "Rate limit requests: a whole number, 1 or more.";
      if (!Number.isInteger(duration) || duration < 1000) return "Rate limit window: at least 1000 ms.";
      out.ratelimits = [{ name: rlName.value.trim(), limit, duration, autoApply: true }];
    } else if (editing && rl) out.ratelimits = [];
    const perms = list(permissions.value);
    if (perms.length > 0 || editing) out.permissions = perms;
    const roleList = list(roles.value);
    if (roleList.length > 0 || editing) out.roles = roleList;
    if (meta.value.trim()) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(meta.value);
      } catch (err) {
        return `Meta is not valid JSON: ${(err as Error).message}`;
      }
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
        return 'Meta must be a JSON object, e.g. {"plan": "pro"}.';
      out.meta = parsed as Record<string, unknown>;
    } else if (editing && initial?.meta) out.meta = null;
    return out;
  };
  return { element, read };
}
