// Form inputs shared by keys and identities: several named rate limits (rows added and removed)
// and meta as a JSON object, each read back as the API takes it or as a message saying what to fix.
import type { RatelimitConfig, RatelimitRequest } from "../protocol/types";
import { field, h, uid } from "./dom";

/** The units a window is entered and shown in, largest first. */
const UNITS = [
  { ms: 86_400_000, name: "days", short: (n: number) => `${n} ${n === 1 ? "day" : "days"}` },
  { ms: 3_600_000, name: "hours", short: (n: number) => `${n} h` },
  { ms: 60_000, name: "minutes", short: (n: number) => `${n} min` },
  { ms: 1000, name: "seconds", short: (n: number) => `${n} s` },
] as const;

/** The largest unit `ms` is a whole number of; seconds (with a fraction) when none. */
const unitOf = (ms: number) => UNITS.find((u) => ms % u.ms === 0) ?? UNITS[3];

/** A window (ms) in the largest unit it is a whole number of: "1 min", "36 h", "2 days", "1.5 s". */
export function durationText(ms: number): string {
  const unit = unitOf(ms);
  return unit.short(ms / unit.ms);
}

/**
 * A window entered as a number and a unit (seconds, minutes, hours, days), never in milliseconds:
 * `read()` gives milliseconds, or NaN when the number is missing or not a whole number of ms.
 */
export function durationInput(
  label: string,
  name: string,
  initialMs?: number,
  hint?: string,
): { element: HTMLElement; read(): number; set(ms: number | undefined): void; number: HTMLInputElement } {
  const number = h("input", { name, type: "number", min: 0, step: "any", "data-duration": "number" });
  const unit = h(
    "select",
    { name: `${name}Unit`, "aria-label": `${label} unit`, "data-duration": "unit" },
    UNITS.map((u) => h("option", { value: String(u.ms) }, u.name)),
  );
  const set = (ms: number | undefined) => {
    if (ms === undefined) {
      number.value = "";
      unit.value = String(60_000);
      return;
    }
    const u = unitOf(ms);
    unit.value = String(u.ms);
    number.value = String(ms / u.ms);
  };
  set(initialMs);
  number.id = uid("f");
  const hintEl = hint ? h("small", { id: `${number.id}-hint` }, hint) : null;
  if (hintEl) number.setAttribute("aria-describedby", hintEl.id);
  const element = h(
    "div",
    { class: "field" },
    h("label", { for: number.id }, label),
    h("div", { class: "duration" }, number, unit),
    hintEl,
  );
  const read = () => {
    if (number.value.trim() === "") return Number.NaN;
    // 0.1 minutes is 6000.000000000001 in floating point: a hair from a whole number counts as it.
    const ms = Number(number.value) * Number(unit.value);
    const whole = Math.round(ms);
    return Math.abs(ms - whole) < 1e-6 ? whole : Number.NaN;
  };
  return { element, read, set, number };
}

/** Rows of named rate limits; `read()` gives the list the API takes, or what to fix. */
export function ratelimitsInput(initial: readonly RatelimitConfig[] = []): { element: HTMLElement; read(): RatelimitRequest[] | string } {
  const rows = h("div", { class: "rl-rows" });
  const windows = new WeakMap<HTMLElement, ReturnType<typeof durationInput>>();
  const add = (rl?: RatelimitConfig) => {
    const n = rows.children.length + 1;
    const name = h("input", { name: "ratelimitName", value: rl?.name ?? "", "data-rl": "name" });
    const limit = h("input", { name: "ratelimitLimit", type: "number", min: 1, step: 1, value: rl?.limit ?? "", "data-rl": "limit" });
    const duration = durationInput("Window", "ratelimitDuration", rl?.duration);
    const auto = h("input", { type: "checkbox", id: uid("rl"), "data-rl": "auto", checked: rl ? rl.autoApply : true });
    const row = h(
      "fieldset",
      { class: "rl-row" },
      h("legend", {}, `Rate limit ${n}`),
      field("Rate limit name", name, "e.g. requests"),
      field("Requests", limit),
      duration.element,
      h("div", { class: "check" }, auto, h("label", { for: auto.id }, "Applied on every verification")),
    );
    windows.set(row, duration);
    row.append(h("button", { type: "button", "aria-label": `Remove rate limit ${n}`, onclick: () => row.remove() }, "Remove"));
    rows.append(row);
  };
  for (const rl of initial) add(rl);
  const element = h("div", { class: "rl-input" }, rows, h("button", { type: "button", onclick: () => add() }, "Add a rate limit"));
  const read = (): RatelimitRequest[] | string => {
    const out: RatelimitRequest[] = [];
    for (const row of rows.querySelectorAll<HTMLFieldSetElement>(".rl-row")) {
      const get = (k: string) => row.querySelector<HTMLInputElement>(`[data-rl="${k}"]`)!;
      const window = windows.get(row)!;
      const name = get("name").value.trim();
      if (!name && !get("limit").value && !window.number.value) continue;
      const limit = Number(get("limit").value);
      const duration = window.read();
      if (name.length < 3) return "Rate limit name: at least 3 characters.";
      if (out.some((r) => r.name === name)) return `Rate limit ${name}: the names must differ.`;
      if (!Number.isInteger(limit) || limit < 1) return `Rate limit ${name}: requests, a whole number, 1 or more.`;
      const problem = windowProblem(duration);
      if (problem) return `Rate limit ${name}: ${problem}`;
      out.push({ name, limit, duration, autoApply: get("auto").checked });
    }
    return out;
  };
  return { element, read };
}

/** What is wrong with a window read from `durationInput` (ms), or undefined when it is one the service takes. */
export function windowProblem(ms: number): string | undefined {
  if (!Number.isInteger(ms)) return "a window, e.g. 60 seconds or 1 hour.";
  if (ms < 1000) return "a window of at least 1 second.";
  return undefined;
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

/** A rate limit as a short text: "requests: 10 / 1 min". */
export function limitText(r: { name: string; limit: number; duration: number }): string {
  return `${r.name}: ${r.limit} / ${durationText(r.duration)}`;
}
