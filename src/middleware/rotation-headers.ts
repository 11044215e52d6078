// `Deprecation` (RFC 9745) and `Sunset` (RFC 8594) on an admitted request whose key is ending: the
// provider's customers learn in-band that their key stops working, and when. The verification
// answer does not say why a key expires (production's protocol has no "rerolled" field: a reroll
// sets the old key's `expires` to the end of its grace), so a key is "ending" when it expires within
// the window; a rerolled key is in its grace for exactly that last stretch. Pure.

/** What apiKeyAuth({ rotationHeaders }) parsed to: how long before its expiry a key counts as ending (ms). */
export interface RotationHeaderSettings {
  readonly window: number;
}

/**
 * The headers for a key that expires at `expires` (Unix ms), as seen at `now`: none when it has no
 * expiry, already expired, or expires later than `window` from now. `Deprecation` is the moment
 * the key entered the window (`@<Unix seconds>`, a structured-field date), `Sunset` its expiry
 * (an HTTP-date); both stay the same on every request of the key.
 */
export function rotationHeaders(
  expires: number | undefined,
  settings: RotationHeaderSettings,
  now: number,
): Record<string, string> | undefined {
  if (typeof expires !== "number" || !Number.isFinite(expires) || expires <= now || expires - now > settings.window) return undefined;
  return {
    Deprecation: `@${Math.floor((expires - settings.window) / 1000)}`,
    Sunset: new Date(expires).toUTCString(),
  };
}
