// What the console's page journeys share: the key service with its console in this process (memory
// storage, or the backend a suite names), Chromium, a tab that records CSP violations, page errors, requests to another origin
// and root keys in URLs or console messages; sign-in; axe in both colour schemes; screenshots in both
// schemes (KEYGUARD_SCREENSHOTS=1 writes them into docs/console/); keyboard-only moves.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, expect } from "vitest";
import { silentLogger } from "keyguard";
import type { LocalKeyServiceOptions, RunningLocalKeyService } from "keyguard/server";
import { startLocalUnderTest, type Backend } from "../support/store-under-test";
import { launch, seriousViolations, type Browser } from "./browser";

const SHOTS = process.env.KEYGUARD_SCREENSHOTS === "1" ? join(process.cwd(), "docs", "console") : undefined;

export interface Harness {
  service: RunningLocalKeyService;
  browser: Browser;
  call(op: string, body: unknown, key?: string): Promise<{ status: number; body: { data?: unknown; error?: { detail: string } } }>;
  /** A new tab at the console; `problems` collects what must never happen. */
  open(): Promise<{ page: Page; problems: string[] }>;
  signIn(page: Page, key?: string): Promise<void>;
  /** axe: no serious or critical finding, in the light and the dark colour scheme. */
  expectAccessible(page: Page, where: string): Promise<void>;
  /** Screenshots `<name>.png` (light) and `<name>-dark.png`, when KEYGUARD_SCREENSHOTS=1. */
  shot(page: Page, name: string, fullPage?: boolean): Promise<void>;
  newApi(): Promise<string>;
}

/** Starts the service (with `options()`, on `backend`) and Chromium for the suite it is called in (closed after it). */
export function useConsole(options: () => LocalKeyServiceOptions = () => ({}), backend: Backend = "memory"): Harness {
  const h = {} as Harness;
  beforeAll(async () => {
    h.service = await startLocalUnderTest({ console: true, logger: silentLogger, ...options() }, backend);
    h.browser = await launch();
  }, 60_000);
  afterAll(async () => {
    await h.browser?.close();
    await h.service?.close();
  });

  h.call = async (op, body, key = h.service.rootKey) => {
    const res = await fetch(`${h.service.baseUrl}/v2/${op}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as never };
  };

  h.open = async () => {
    const page = await h.browser.context.newPage();
    const problems: string[] = [];
    const base = h.service.baseUrl;
    page.on("console", (m) => {
      if (m.type() === "error" && /Content Security Policy|Refused to/.test(m.text())) problems.push(m.text());
      if (m.text().includes("root_")) problems.push(`a root key in the browser's console: ${m.text()}`);
    });
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    page.on("request", (r) => {
      if (!r.url().startsWith(`${base}/`)) problems.push(`request to another origin: ${r.url()}`);
      if (r.url().includes("root_")) problems.push(`a root key in a URL: ${r.url()}`);
    });
    page.on("framenavigated", (f) => {
      if (f.url().includes("root_")) problems.push(`a root key in the location: ${f.url()}`);
    });
    await page.goto(`${base}/`);
    return { page, problems };
  };

  h.signIn = async (page, key = h.service.rootKey) => {
    await page.getByLabel("Root key").fill(key);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("navigation", { name: "Sections" }).waitFor();
  };

  h.expectAccessible = expectAccessible;
  h.shot = shot;

  h.newApi = async () => {
    const res = await h.call("apis.createApi", { name: `console-${Math.random().toString(36).slice(2, 10)}` });
    return (res.body.data as { apiId: string }).apiId;
  };
  return h;
}

/** axe: no serious or critical finding, in the light and the dark colour scheme. */
export async function expectAccessible(page: Page, where: string): Promise<void> {
  for (const colorScheme of ["light", "dark"] as const) {
    await page.emulateMedia({ colorScheme });
    const violations = await seriousViolations(page);
    expect(violations, `${where} (${colorScheme}): ${JSON.stringify(violations, null, 1)}`).toEqual([]);
  }
  await page.emulateMedia({ colorScheme: "light" });
}

/** Screenshots `<name>.png` (light) and `<name>-dark.png` into docs/console/, when KEYGUARD_SCREENSHOTS=1 (the whole page with `fullPage`). */
export async function shot(page: Page, name: string, fullPage = false): Promise<void> {
  if (!SHOTS) return;
  mkdirSync(SHOTS, { recursive: true });
  await page.evaluate("window.scrollTo(0, 0)");
  for (const [colorScheme, file] of [
    ["light", `${name}.png`],
    ["dark", `${name}-dark.png`],
  ] as const) {
    await page.emulateMedia({ colorScheme });
    await page.screenshot({ path: join(SHOTS, file), fullPage });
  }
  await page.emulateMedia({ colorScheme: "light" });
}

/** A short random suffix for names. */
export const rand = (): string => Math.random().toString(36).slice(2, 8);

/** A new root key holding only `permissions`. */
export async function rootKeyWith(c: Harness, ...permissions: string[]): Promise<string> {
  return ((await c.call("rootKeys.createRootKey", { name: "limited", permissions })).body.data as { key: string }).key;
}

/** The first alert's text (an error or a form check). */
export function alertText(page: Page): Promise<string> {
  return page.getByRole("alert").first().innerText();
}

/** What has the keyboard focus: its accessible name as a person would read it. */
async function focused(page: Page): Promise<string> {
  return page.evaluate<string>(`(() => {
    const el = document.activeElement;
    if (!el || el === document.body) return "";
    const label = el.getAttribute("aria-label") || (el.labels && el.labels[0] && el.labels[0].textContent) || el.textContent || "";
    return label.trim();
  })()`);
}

/** Presses Tab (Shift+Tab when `back`) until the focused control's name is `name`; fails after 80 presses. */
export async function tabTo(page: Page, name: string | RegExp, back = false): Promise<void> {
  const seen: string[] = [];
  for (let i = 0; i < 80; i++) {
    await page.keyboard.press(back ? "Shift+Tab" : "Tab");
    const now = await focused(page);
    if (typeof name === "string" ? now === name : name.test(now)) return;
    seen.push(now);
  }
  throw new Error(`Tab never reached ${String(name)}; focus went through: ${seen.join(" | ")}`);
}
