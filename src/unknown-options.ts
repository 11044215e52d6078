// Warns once, at factory time, about option names a factory does not know, suggesting the
// closest known name (a typo such as `optinal` would otherwise be silently ignored). Shared by
// createClient(), apiKeyAuth() and the local key service.

import type { Logger } from "./logger";

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

/**
 * The option names given: the keys of `options`, and `name.key` for the keys of each option in
 * `nested` whose value is a plain object (e.g. `retry.attempts`), for {@link warnUnknownOptions}.
 */
export function givenOptionNames(options: object, nested: readonly string[]): string[] {
  const names = Object.keys(options);
  for (const name of nested) {
    const value: unknown = (options as Record<string, unknown>)[name];
    if (typeof value === "object" && value !== null && !Array.isArray(value)) names.push(...Object.keys(value).map((k) => `${name}.${k}`));
  }
  return names;
}

/** The name of `known` that `name` is a near miss of (same letters in another case, or at most two edits away). */
export function nearestName(name: string, known: readonly string[]): string | undefined {
  return known.find((k) => k.toLowerCase() === name.toLowerCase() || editDistance(k, name) <= 2);
}

/**
 * Logs one warning naming the `given` option names that are not in `known`, with a suggestion for
 * each that is a near miss (same letters in another case, or at most two edits away).
 * `where` names the factory, e.g. `"apiKeyAuth"`.
 */
export function warnUnknownOptions(where: string, given: readonly string[], known: readonly string[], logger: Logger): void {
  const unknown = given.filter((k) => !known.includes(k));
  if (unknown.length === 0) return;
  const suggestions: Record<string, string> = {};
  for (const name of unknown) {
    const near = nearestName(name, known);
    if (near !== undefined) suggestions[name] = near;
  }
  logger.warn({ unknownOptions: unknown, didYouMean: suggestions }, `${where}: ignoring unknown option(s) ${unknown.join(", ")}`);
}
