// A tiny element builder: h("button", { onclick, class: "x" }, "text", child). Text is always set as
// text (never parsed as HTML), so nothing an API returns can run as script.
type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | undefined | null | ((ev: Event) => void)>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Array<Child | Child[]>
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (typeof value === "function") el.addEventListener(name.slice(2), value);
    else if (value === true) el.setAttribute(name, "");
    else el.setAttribute(name, String(value));
  }
  append(el, children);
  return el;
}

/** A table's head: one row of column headers. */
export function thead(...columns: string[]): HTMLTableSectionElement {
  return h(
    "thead",
    {},
    h(
      "tr",
      {},
      columns.map((t) => h("th", { scope: "col" }, t)),
    ),
  );
}

function append(parent: Node, children: Array<Child | Child[]>): void {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
  }
}

export function replace(parent: Element, ...children: Array<Child | Child[]>): void {
  parent.replaceChildren();
  append(parent, children);
}

const SVG = "http://www.w3.org/2000/svg";
export function svg(tag: string, attrs: Record<string, string | number> = {}, ...children: Array<Node | string>): SVGElement {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  for (const child of children) el.append(child);
  return el;
}

const DATE_TIME: Intl.DateTimeFormatOptions = {
  year: "numeric",
  month: "short",
  day: "numeric",
  hour: "2-digit",
  minute: "2-digit",
  second: "2-digit",
  timeZoneName: "short",
};

/** Hour and minute in the reader's locale: a chart's tick. */
export const hourMinute = (ms: number): string => new Date(ms).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });

/** Date and time in the reader's locale, with the time zone; "never" for undefined. */
export function when(ms: number | undefined | null): string {
  return ms === undefined || ms === null ? "never" : new Date(ms).toLocaleString(undefined, DATE_TIME);
}

const DAY: Intl.DateTimeFormatOptions = { year: "numeric", month: "short", day: "numeric" };
const TIME: Intl.DateTimeFormatOptions = { hour: "2-digit", minute: "2-digit", timeZoneName: "short" };

/**
 * A date for a table cell: the day and the time (to the minute, with the time zone) each kept on
 * one line, so that a narrow column breaks between them and nowhere else; the full `when()` as
 * its title. "never" for undefined.
 */
export function dateCell(ms: number | undefined | null): HTMLElement {
  if (ms === undefined || ms === null) return h("span", { class: "muted" }, "never");
  const d = new Date(ms);
  return h(
    "time",
    { datetime: d.toISOString(), title: when(ms), class: "date" },
    h("span", {}, d.toLocaleDateString(undefined, DAY)),
    " ",
    h("span", {}, d.toLocaleTimeString(undefined, TIME)),
  );
}

let ids = 0;
/** A fresh element id (labels need one). */
export function uid(prefix: string): string {
  return `${prefix}-${++ids}`;
}

/** A labelled input: the label's for= is the control's id. */
export function field(label: string, control: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement, hint?: string): HTMLElement {
  control.id ||= uid("f");
  const hintEl = hint ? h("small", { id: `${control.id}-hint` }, hint) : null;
  if (hintEl) control.setAttribute("aria-describedby", hintEl.id);
  return h("div", { class: "field" }, h("label", { for: control.id }, label), control, hintEl);
}
