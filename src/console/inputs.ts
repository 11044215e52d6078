// Form inputs shared by keys and identities: several named rate limits (rows added and removed)
// and meta as a JSON object, each read back as the API takes it or as a message saying what to fix.
import type { RatelimitConfig, RatelimitRequest } from "../protocol/types";
import { field, h, uid } from "./dom";

/** Rows of named rate limits; `read()` gives the list the API takes, or what to fix. */
export function ratelimitsInput(initial: readonly RatelimitConfig[] = []): { element: HTMLElement; read(): RatelimitRequest[] | string } {
  const rows = h("div", { class: "rl-rows" });
  const add = (rl?: RatelimitConfig) => {
    const n = rows.children.length + 1;
    const name = h("input", { name: "ratelimitName", value: rl?.name ?? "", "data-rl": "name" });
    const limit = h("input", { name: "ratelimitLimit", type: "number", min: 1, step: 1, value: rl?.limit ?? "", "data-rl": "limit" });
    const duration = h("input", {
      name: "ratelimitDuration",
      type: "number",
      min: 1000,
      step: 1000,
      value: rl?.duration ?? "",
      "data-rl": "duration",
    });
    const auto = h("input", { type: "checkbox", id: uid("rl"), "data-rl": "auto", checked: rl ? rl.autoApply : true });
    const row = h(
      "fieldset",
      { class: "rl-row" },
      h("legend", {}, `Rate limit ${n}`),
      field("Rate limit name", name, "e.g. requests"),
      field("Requests", limit),
      field("Window (ms)", duration),
      h("div", { class: "check" }, auto, h("label", { for: auto.id }, "Applied on every verification")),
    );
    row.append(h("button", { type: "button", "aria-label": `Remove rate limit ${n}`, onclick: () => row.remove() }, "Remove"));
    rows.append(row);
  };
  for (const rl of initial) add(rl);
  const element = h("div", { class: "rl-input" }, rows, h("button", { type: "button", onclick: () => add() }, "Add a rate limit"));
  const read = (): RatelimitRequest[] | string => {
    const out: RatelimitRequest[] = [];
    for (const row of rows.querySelectorAll<HTMLFieldSetElement>(".rl-row")) {
      const get = (k: string) => row.querySelector<HTMLInputElement>(`[data-rl="${k}"]`)!;
      const name = get("name").value.trim();
      if (!name && !get("limit").value && !get("duration").value) continue;
      const limit = Number(get("limit").value);
      const duration = Number(get("duration").value);
      if (name.length < 3) return "Rate limit name: at least 3 characters.";
      if (out.some((r) => r.name === name)) return `Rate limit ${name}: the names must differ.`;
      if (!Number.isInteger(limit) || limit < 1) return `Rate limit ${name}: requests, a whole number, 1 or more.`;
      if (!Number.isInteger(duration) || duration < 1000) return `Rate limit ${name}: a window of at least 1000 ms.`;
      out.push({ name, limit, duration, autoApply: get("auto").checked });
    }
    return out;
  };
  return { element, read };
}

/** Meta as a JSON object in a textarea: `read()` gives the object, null when emptied, or what to fix. */
export function metaInput(initial?: Record<string, unknown>): { element: HTMLElement; read(): Record<string, unknown> | null | string } {
  const meta = h("textarea", { name: "meta", rows: 3, spellcheck: "false" });
  meta.value = initial ? JSON.stringify(initial, null, 2) : "";
  const read = (): Record<string, unknown> | null | string => {
    if (!meta.value.trim()) return null;
    let parsed: unknown;
    try {
      parsed = JSON.parse(meta.value);
    } catch (err) {
      return `Meta is not valid JSON: ${(err as Error).message}`;
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return 'Meta must be a JSON object, e.g. {"plan": "pro"}.';
    return parsed as Record<string, unknown>;
  };
  return { element: field("Meta (JSON object)", meta, 'e.g. {"plan": "pro"}'), read };
}

/** A message of a form check, shown as an alert in `slot`. */
export function problem(slot: HTMLElement, message: string): void {
  slot.replaceChildren(h("div", { class: "error", role: "alert" }, h("p", { class: "detail" }, message)));
}

/** A rate limit as a short text: "requests: 10 / 60 s". */
export function limitText(r: { name: string; limit: number; duration: number }): string {
  return `${r.name}: ${r.limit} / ${r.duration >= 1000 && r.duration % 1000 === 0 ? `${r.duration / 1000} s` : `${r.duration} ms`}`;
}
