// Option names a factory does not know, found at factory time with the closest known name as a
// suggestion (a typo such as `optinal` would otherwise be silently ignored). createClient(),
// apiKeyAuth() and every adapter refuse them (a misspelled `permissions` must not remove a check),
// as do the memory and SQLite/PostgreSQL stores; the local key service and redisStore() warn once.

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

/** Option names a factory does not know, each with its near miss when there is one. */
export interface UnknownOptions {
  readonly names: readonly string[];
  /** Unknown name → the known name it is a near miss of (see {@link nearestName}). */
  readonly didYouMean: Readonly<Record<string, string>>;
}

/** The `given` names that are not in `known`, with suggestions; undefined when every name is known. */
export function findUnknownOptions(given: readonly string[], known: readonly string[]): UnknownOptions | undefined {
  const names = given.filter((k) => !known.includes(k));
  if (names.length === 0) return undefined;
  const didYouMean: Record<string, string> = {};
  for (const name of names) {
    const near = nearestName(name, known);
    if (near !== undefined) didYouMean[name] = near;
  }
  return { names, didYouMean };
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

/**
 * Edits allowed between a name and a known one: one for short names, two when both have 5 or more
 * characters. Two edits on short names suggest unrelated words (`ttl` is two edits from `url`).
 */
function editsAllowed(a: string, b: string): number {
  return Math.min(a.length, b.length) >= 5 ? 2 : 1;
}

/** `a.b.c` → [`a.b`, `c`]: an option inside another is compared only with names inside the same one. */
function splitName(name: string): [parent: string, leaf: string] {
  const dot = name.lastIndexOf(".");
  return dot < 0 ? ["", name] : [name.slice(0, dot), name.slice(dot + 1)];
}

/**
 * The name of `known` that `name` is a near miss of: the same letters in another case, else the
 * closest within {@link editsAllowed} edits (the first one on a tie). A nested name (`cache.ttll`)
 * is compared only with the names of the same option (`cache.ttl`), by its last part.
 */
export function nearestName(name: string, known: readonly string[]): string | undefined {
  const sameLetters = known.find((k) => k.toLowerCase() === name.toLowerCase());
  if (sameLetters !== undefined) return sameLetters;
  const [parent, leaf] = splitName(name);
  let nearest: string | undefined;
  let nearestDistance = Infinity;
  for (const k of known) {
    const [kParent, kLeaf] = splitName(k);
    if (kParent !== parent) continue;
    const distance = editDistance(kLeaf, leaf);
    if (distance <= editsAllowed(kLeaf, leaf) && distance < nearestDistance) {
      nearest = k;
      nearestDistance = distance;
    }
  }
  return nearest;
}

/**
 * Logs one warning naming the `given` option names that are not in `known`, with a suggestion for
 * each that is a near miss. `where` names the factory, e.g. `"apiKeyAuth"`. For factories that take
 * a logger: the rest of the configuration is still used.
 */
export function warnUnknownOptions(where: string, given: readonly string[], known: readonly string[], logger: Logger): void {
  const found = findUnknownOptions(given, known);
  if (found === undefined) return;
  logger.warn(
    { unknownOptions: found.names, didYouMean: found.didYouMean },
    `${where}: ignoring unknown option(s) ${found.names.join(", ")}`,
  );
}

/**
 * The sentence with which a factory that has no logger refuses unknown option names, e.g.
 * `unknown option synchronus (did you mean synchronous?); the options are driver, synchronous, busyTimeoutMs.`
 * Names only, never values.
 */
export function unknownOptionsMessage(found: UnknownOptions, known: readonly string[]): string {
  const listed = found.names.map((n) => (found.didYouMean[n] === undefined ? n : `${n} (did you mean ${found.didYouMean[n]}?)`));
  return `unknown option${found.names.length === 1 ? "" : "s"} ${listed.join(", ")}; the options are ${known.join(", ")}.`;
}
