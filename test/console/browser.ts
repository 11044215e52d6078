// The browser the console tests drive: Debian's Chromium (/usr/bin/chromium) through
// playwright-core, never a downloaded build. Without it the suites say plainly that they did not
// run; with env CI set they fail instead.
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";

const CHROMIUM = process.env.KEYGUARD_CHROMIUM ?? "/usr/bin/chromium";
/** Whether the browser suites run: Chromium is there, or CI demands them (and fails without it). */
const BROWSER_AVAILABLE = existsSync(CHROMIUM);
export const RUN_BROWSER = BROWSER_AVAILABLE || Boolean(process.env.CI);

if (!RUN_BROWSER) {
  console.log(
    `[skipped] the console's browser tests did not run: no Chromium at ${CHROMIUM}. ` +
      "Install Debian's chromium package (apt-get install chromium) or set KEYGUARD_CHROMIUM to run them; with env CI set they fail instead.",
  );
}

const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** Chromium with a fresh profile directory (removed on close). */
export async function launch(): Promise<Browser> {
  if (!BROWSER_AVAILABLE)
    throw new Error(`No Chromium at ${CHROMIUM}: the console's browser tests need Debian's chromium package (CI installs it).`);
  const profile = mkdtempSync(join(tmpdir(), "keyguard-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport: { width: 1200, height: 760 },
    locale: "en-GB",
    timezoneId: "UTC",
  });
  // A step that cannot happen fails within seconds, naming what it waited for.
  context.setDefaultTimeout(8000);
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: string[] }>;
}

/** axe-core's violations of serious or critical impact on the page as it is now. */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  // Evaluated over the DevTools protocol: the page's CSP (rightly) refuses inline scripts.
  await page.evaluate(AXE);
  // A string: it runs in the page, whose globals (document, axe) this file's types do not know.
  const violations = await page.evaluate<AxeViolation[]>(`axe.run(document, { resultTypes: ["violations"] }).then((r) =>
    r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target })) })))`);
  return violations.filter((v) => v.impact === "serious" || v.impact === "critical");
}
