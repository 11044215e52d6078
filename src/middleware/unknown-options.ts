// Warns once, at factory time, about option names `apiKeyAuth()` does not know, suggesting the
// closest known name (a typo such as `optinal` would otherwise be silently ignored).

import type { Logger } from "../logger";
import { OPTION_NAMES } from "./options";

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const next = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = row[j]!;
      row[j] = next;
    }
  }
  return row[b.length]!;
}

export function warnUnknownOptions(options: Record<string, unknown>, logger: Logger): void {
  const unknown = Object.keys(options).filter((k) => !OPTION_NAMES.includes(k));
  if (unknown.length === 0) return;
  const suggestions: Record<string, string> = {};
  for (const name of unknown) {
    const near = OPTION_NAMES.find((k) => k.toLowerCase() === name.toLowerCase() || editDistance(k, name) <= 2);
    if (near !== undefined) suggestions[name] = near;
  }
  logger.warn({ unknownOptions: unknown, didYouMean: suggestions }, `apiKeyAuth: ignoring unknown option(s) ${unknown.join(", ")}`);
}
