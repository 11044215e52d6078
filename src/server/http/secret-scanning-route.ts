// `POST /secret-scanning/github`: the receiving side of GitHub's secret scanning partner program,
// on with the `secretScanning` option. A report is authenticated by its signature, not a root key:
// ECDSA P-256 with SHA-256 over the raw body (base64 DER in `Github-Public-Key-Signature`), by the
// published key named in `Github-Public-Key-Identifier`. Then: a report seen before is refused, the
// body is read, each token is looked up and labelled (leaks/respond.ts).
import { verify, type KeyObject } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { STATUS_TITLES } from "../../protocol/status-titles";
import { PublicKeys, PublicKeysUnavailableError, describeSource } from "../leaks/public-keys";
import { ReplayGuard } from "../leaks/replay-guard";
import { REPORT_BYTES_LIMIT, ReportError, parseReport } from "../leaks/report";
import { applyReport, keyLeaked } from "../leaks/respond";
import { clientIp } from "./client-ip";
import type { ServiceCore } from "../service";
import { isStoreUnavailable } from "../storage/store-failures";
import { JSON_TYPE, send } from "./send";

export const SECRET_SCANNING_PATH = "/secret-scanning/github";

const KEY_ID_HEADER = "github-public-key-identifier";
const SIGNATURE_HEADER = "github-public-key-signature";
/** A key identifier as the host writes them (hex digests today), bounded. */
const KEY_ID = /^[\x21-\x7e]{1,256}$/;
/** Base64 of a DER ECDSA P-256 signature (at most 72 bytes), with room to spare. */
const SIGNATURE = /^[A-Za-z0-9+/]{16,200}={0,2}$/;

/** One answer for every signature failure: which check failed is not said. */
const UNVERIFIED = "The report's signature could not be verified.";

class Refusal extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** A refusal as JSON: `{ meta: { requestId }, error: { title, detail, status } }`. */
function refuse(req: IncomingMessage, res: ServerResponse, requestId: string, err: Refusal): void {
  req.resume();
  const error = { title: STATUS_TITLES[err.status] ?? "Error", detail: err.message, status: err.status };
  send(res, err.status, JSON_TYPE, JSON.stringify({ meta: { requestId }, error }), err.headers);
}

/** The raw body, at most REPORT_BYTES_LIMIT bytes, not decompressed (the signature covers these bytes). */
function rawBody(req: IncomingMessage): Promise<Buffer> {
  const tooLarge = () => new Refusal(413, `The report exceeds ${REPORT_BYTES_LIMIT} bytes.`);
  if (Number(req.headers["content-length"] ?? 0) > REPORT_BYTES_LIMIT) return Promise.reject(tooLarge());
  const encoding = (req.headers["content-encoding"] ?? "identity").trim().toLowerCase();
  if (encoding !== "identity") return Promise.reject(new Refusal(400, "The report must not be compressed (Content-Encoding)."));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    req.on("data", (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      if (size > REPORT_BYTES_LIMIT) {
        failed = true;
        return reject(tooLarge());
      }
      chunks.push(chunk);
    });
    req.on("error", () => {
      failed = true;
      reject(new Refusal(400, "The report could not be read."));
    });
    req.on("end", () => failed || resolve(Buffer.concat(chunks, size)));
  });
}

/** Whether `signature` (base64 DER) is `key`'s over `body`. A malformed signature is simply not. */
function signedBy(key: KeyObject, signature: string, body: Buffer): boolean {
  try {
    return verify("sha256", body, { key, dsaEncoding: "der" }, Buffer.from(signature, "base64"));
  } catch {
    return false;
  }
}

/** The request handler of the endpoint, with its own public keys and replay memory. */
export function secretScanningEndpoint(core: ServiceCore): (req: IncomingMessage, res: ServerResponse, requestId: string) => void {
  const source = core.config.secretScanning!.publicKeys;
  const keys = new PublicKeys(source, core.config.now);
  const replays = new ReplayGuard(core.config.now);
  const { logger } = core.config;

  async function handle(req: IncomingMessage, res: ServerResponse, requestId: string): Promise<void> {
    if (req.method !== "POST") throw new Refusal(405, `${req.method} is not allowed here; use POST.`, { Allow: "POST" });
    const keyId = req.headers[KEY_ID_HEADER];
    const signature = req.headers[SIGNATURE_HEADER];
    const body = await rawBody(req);
    if (typeof keyId !== "string" || !KEY_ID.test(keyId) || typeof signature !== "string" || !SIGNATURE.test(signature)) {
      throw new Refusal(401, UNVERIFIED);
    }
    let key: KeyObject | undefined;
    try {
      key = await keys.get(keyId);
    } catch (err) {
      const why = err instanceof PublicKeysUnavailableError ? err.message : String(err);
      logger.error(
        { requestId, source: describeSource(source), error: why },
        "keyguard/server: cannot read the secret scanning public keys",
      );
      throw new Refusal(503, "The public keys to check the report with cannot be read now. Please retry later.", { "Retry-After": "60" });
    }
    if (key === undefined || !signedBy(key, signature, body)) throw new Refusal(401, UNVERIFIED);
    const digest = ReplayGuard.digest(body);
    if (!replays.take(digest)) throw new Refusal(409, "This report was received before.");
    try {
      const tokens = parseReport(body);
      const request = { requestId, ip: clientIp(req.socket.remoteAddress, req.headers["x-forwarded-for"], core.config.trustProxy) };
      const { labels, leaked } = await core.store.transaction((tx) => applyReport(tx, tokens, core.config.now(), request));
      for (const leak of leaked) await keyLeaked(leak, { logger, invalidate: core.config.invalidate });
      send(res, 200, JSON_TYPE, JSON.stringify(labels));
    } catch (err) {
      // Not taken: the host's retry of a report that failed here is handled.
      replays.release(digest);
      if (err instanceof ReportError) throw new Refusal(err.tooMany ? 413 : 400, `Invalid report: ${err.message}`);
      throw err;
    }
  }

  return (req, res, requestId) => {
    handle(req, res, requestId).catch((err: unknown) => {
      if (err instanceof Refusal) return refuse(req, res, requestId, err);
      if (isStoreUnavailable(err)) {
        core.failures.report(err);
        return refuse(
          req,
          res,
          requestId,
          new Refusal(503, "The service is temporarily unavailable. Please retry later.", { "Retry-After": "1" }),
        );
      }
      logger.error(
        { requestId, path: SECRET_SCANNING_PATH, error: err instanceof Error ? err.message : String(err) },
        "keyguard/server: unexpected error while handling a secret scanning report",
      );
      refuse(req, res, requestId, new Refusal(500, "An unexpected error occurred. Please try again."));
    });
  };
}
