// The default transport: undici's `request()` on a keep-alive pool, one pool per client and origin.
// undici is loaded when the first client is created (not when keyguard is imported: loading it
// costs tens of milliseconds, and about half a second on a busy machine); a call made before it is
// loaded waits for it before its first attempt's clock starts (`ready()`). Idle connections do not
// keep the process alive; `close()` closes them.

import type * as UndiciModule from "undici";
import type { Dispatcher, Pool } from "undici";
import { KeyServiceConfigError } from "./errors";
import type { ClientTlsOptions } from "./options";
import type { BodyResult } from "./read-body";
import type { Transport, TransportResponse } from "./transport";

type Undici = typeof UndiciModule;
type Body = Dispatcher.ResponseData["body"];

// The client's own per-attempt signal bounds every exchange; undici's timeouts would cut it short.
const POOL_OPTIONS: Pool.Options = Object.freeze({ headersTimeout: 0, bodyTimeout: 0 });

let undici: Promise<Undici> | undefined;
const noop = () => undefined;

export function undiciTransport(baseUrl: string, tls?: ClientTlsOptions): Transport {
  const url = new URL(baseUrl);
  const prefix = url.pathname === "/" ? "" : url.pathname;
  // A CA given replaces Node.js's list, as in tls.connect(); the client certificate is presented when asked.
  const options: Pool.Options = tls === undefined ? POOL_OPTIONS : { ...POOL_OPTIONS, connect: { ...tls } as Pool.Options["connect"] };
  let pool: Pool | undefined;
  const ready = (undici ??= import("undici")).then(
    (m) => (pool = new m.Pool(url.origin, options)),
    (cause: unknown) => {
      const why = cause instanceof Error ? cause.message.slice(0, 200) : String(cause);
      throw new KeyServiceConfigError(
        "fetch",
        `keyguard client: cannot load undici, a dependency of keyguard (${why}). Reinstall keyguard, or pass { fetch }.`,
      );
    },
  );
  const loaded = ready.then(noop);
  // Reported by the first call, not as an unhandled rejection (whether or not a call ever comes).
  ready.catch(noop);
  loaded.catch(noop);
  return {
    ready: () => (pool === undefined ? loaded : undefined),
    async close() {
      await ready.catch(noop);
      await pool?.close();
    },
    async post(operation, headers, body, signal): Promise<TransportResponse> {
      const answer = await (pool ?? (await ready)).request({ path: `${prefix}/v2/${operation}`, method: "POST", headers, body, signal });
      return {
        status: answer.statusCode,
        header: (name) => first(answer.headers[name]),
        readBody: (maxBytes, readSignal) => readCapped(answer.body, first(answer.headers["content-length"]), maxBytes, readSignal),
      };
    },
  };
}

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Reads `body` up to `maxBytes`. An abort of the request's signal destroys the body with the
 * signal's reason (undici does it), which rejects the read.
 */
function readCapped(body: Body, contentLength: string | undefined, maxBytes: number, signal: AbortSignal): Promise<BodyResult> {
  if (signal.aborted) {
    release(body);
    return Promise.reject(signal.reason as Error);
  }
  const declared = Number(contentLength);
  if (contentLength !== undefined && Number.isFinite(declared) && declared > maxBytes) {
    release(body);
    return Promise.resolve({ tooLarge: true });
  }
  return new Promise<BodyResult>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    body.on("data", (chunk: Buffer) => {
      total += chunk.length;
      if (total > maxBytes) {
        release(body);
        resolve({ tooLarge: true });
        return;
      }
      chunks.push(chunk);
    });
    body.on("end", () => resolve({ tooLarge: false, text: Buffer.concat(chunks, total).toString("utf8") }));
    body.on("error", reject);
  });
}

/** Drops a body we will not read (undici then closes its connection); its abort error is ignored. */
function release(body: Body): void {
  body.on("error", noop);
  body.destroy();
}
