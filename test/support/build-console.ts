// Vitest global setup: builds the web console into dist/console (as `npm run build` does), so that
// the suites serving it run on a fresh clone, before any build.
import { buildConsole } from "../../scripts/build-console.mjs";

export default async function setup(): Promise<void> {
  await buildConsole();
}
