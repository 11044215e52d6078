// One attempt to deliver a webhook message: the Standard Webhooks headers (`webhook-id`,
// `webhook-timestamp`, `webhook-signature`: HMAC-SHA256 of `id.timestamp.body` under the endpoint's
// secret, or under each of its secrets while a rotation's overlap lasts, space-separated as the
// standard allows), a POST to the endpoint's address as checked by the address guard (the connection goes to
// that address, so a second DNS answer cannot redirect it), no redirect followed, a time limit.
import { createHmac, randomBytes } from "node:crypto";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP } from "node:net";
import { resolveAllowed } from "./address-guard";

/** A new signing secret: `whsec_` + base64 of 24 random bytes. */
export function newSecret(): string {
  return `whsec_${randomBytes(24).toString("base64")}`;
}

/** The `webhook-signature` header of a message: one `v1,<signature>` per secret, space-separated. */
function signatures(secrets: readonly string[], id: string, timestamp: number, payload: string): string {
  return secrets
    .map((secret) => {
      const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
      return `v1,${createHmac("sha256", key).update(`${id}.${timestamp}.${payload}`).digest("base64")}`;
    })
    .join(" ");
}

export interface Attempt {
  /** The HTTP status (0: no answer). */
  status: number;
  /** Why it failed, when it did (never the secret, never the body). */
  error?: string;
  latencyMs: number;
}

/** Answers of 2xx deliver; anything else (a redirect included) is a failure to retry. */
export async function deliver(
  target: { url: string; secrets: readonly string[] },
  message: { id: string; payload: string },
  options: { allowPrivate: boolean; timeoutMs: number },
): Promise<Attempt> {
  const start = performance.now();
  const done = (status: number, error?: string): Attempt => ({
    status,
    ...(error === undefined ? {} : { error }),
    latencyMs: Math.round(performance.now() - start),
  });
  let url: URL;
  let address: string;
  try {
    url = new URL(target.url);
    address = await resolveAllowed(url, options.allowPrivate);
  } catch (err) {
    return done(0, (err as Error).message);
  }
  // The wall clock (not the service's): receivers check it against theirs (Standard Webhooks: ±5 min).
  const timestamp = Math.floor(Date.now() / 1000);
  const body = Buffer.from(message.payload);
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise<Attempt>((resolve) => {
    const req = send(
      url,
      {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "content-length": body.length,
          "user-agent": "keyguard-webhooks",
          "webhook-id": message.id,
          "webhook-timestamp": String(timestamp),
          "webhook-signature": signatures(target.secrets, message.id, timestamp, message.payload),
        },
        timeout: options.timeoutMs,
        // The connection goes to the address checked above.
        lookup: (_host, opts, callback) => {
          const family = isIP(address);
          if ((opts as { all?: boolean }).all)
            (callback as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [{ address, family }]);
          else (callback as (e: null, a: string, f: number) => void)(null, address, family);
        },
      },
      (res) => {
        res.resume();
        res.on("end", () => {
          const status = res.statusCode ?? 0;
          resolve(done(status, status >= 200 && status < 300 ? undefined : `answered ${status}`));
        });
        res.on("error", (err) => resolve(done(res.statusCode ?? 0, err.message)));
      },
    );
    req.on("timeout", () => req.destroy(new Error(`no answer within ${options.timeoutMs} ms`)));
    req.on("error", (err) => resolve(done(0, err.message)));
    req.end(body);
  });
}
