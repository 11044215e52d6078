// How an error message speaks of a value the caller sent: by its field, its length and its kind,
// never the value itself. Whether a value "looks like" a key cannot be told from its characters
// (an operator's root key may be hex, base64 or a word list), so no caller's string is repeated
// in an error body, a validation error or a log line; only values from a closed list the service
// itself defines (enum members, operation names, its own ids of records it found) are named.

/** `location` and what kind of value it held: `body.keyId (a string of 43 characters)`. */
export function described(location: string, value: unknown): string {
  return `${location} (${kindOf(value)})`;
}

/** What kind of value it is, and its size: `a string of 43 characters`, `an array of 2 items`, `a number`. */
export function kindOf(value: unknown): string {
  if (typeof value === "string") return value.length === 1 ? "a string of 1 character" : `a string of ${value.length} characters`;
  if (Array.isArray(value)) return value.length === 1 ? "an array of 1 item" : `an array of ${value.length} items`;
  if (value === null) return "null";
  if (typeof value === "object") return "an object";
  return `a ${typeof value}`;
}
