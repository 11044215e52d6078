// The code host's secret-scanning public keys, by key identifier: read from the JSON document it
// publishes (`{ public_keys: [{ key_identifier, key, is_current }] }`, each key a PEM ECDSA P-256
// public key) at a URL or in a file. Kept in memory; read again when a report names a key
// identifier not held (at most once a minute) and when the copy is a day old.
import { createPublicKey, type KeyObject } from "node:crypto";
import { readFile } from "node:fs/promises";

/** Where the document comes from: fetched from a URL, or read from a file. */
export type PublicKeySource = { readonly kind: "url"; readonly url: URL } | { readonly kind: "file"; readonly path: string };

/** The document cannot be had or read: the report cannot be checked now (answered 503, retried by the host). */
export class PublicKeysUnavailableError extends Error {
  override readonly name = "PublicKeysUnavailableError";
}

/** Largest document read, in bytes. */
const DOCUMENT_LIMIT_BYTES = 256 * 1024;
/** A fetch of the document gives up after this long. */
const FETCH_TIMEOUT_MS = 10_000;
/** An unknown key identifier reads the document again at most this often. */
const REFRESH_INTERVAL_MS = 60_000;
/** A copy this old is read again before it is used. */
const KEYS_MAX_AGE_MS = 24 * 60 * 60 * 1000;

/**
 * The keys of a document by identifier. Throws a message saying what is wrong (never a key's
 * text): not JSON, no `public_keys` array, an entry without identifier or key, a key that is not
 * an ECDSA P-256 public key.
 */
export function parsePublicKeys(text: string): Map<string, KeyObject> {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new Error("it is not JSON");
  }
  const list = (doc as { public_keys?: unknown } | null)?.public_keys;
  if (!Array.isArray(list) || list.length === 0) throw new Error('it has no "public_keys" array of keys');
  const keys = new Map<string, KeyObject>();
  list.forEach((entry: unknown, i) => {
    const { key_identifier: id, key } = (entry ?? {}) as { key_identifier?: unknown; key?: unknown };
    if (typeof id !== "string" || id === "" || id.length > 256) throw new Error(`public_keys[${i}] has no key_identifier`);
    if (typeof key !== "string") throw new Error(`public_keys[${i}] has no key`);
    let object: KeyObject;
    try {
      object = createPublicKey(key);
    } catch {
      throw new Error(`public_keys[${i}].key is not a PEM public key`);
    }
    if (object.asymmetricKeyType !== "ec" || object.asymmetricKeyDetails?.namedCurve !== "prime256v1") {
      throw new Error(`public_keys[${i}].key is not an ECDSA P-256 key`);
    }
    keys.set(id, object);
  });
  return keys;
}

/** The document's text: the file's, or the URL's answer (200, at most 256 KB, within 10 s). */
async function readDocument(source: PublicKeySource): Promise<string> {
  if (source.kind === "file") {
    try {
      return await readFile(source.path, "utf8");
    } catch (err) {
      throw new PublicKeysUnavailableError(`cannot read the file (${(err as NodeJS.ErrnoException).code ?? "error"})`);
    }
  }
  let res: Response;
  try {
    res = await fetch(source.url, { headers: { accept: "application/json" }, signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
  } catch (err) {
    throw new PublicKeysUnavailableError(`cannot fetch them (${err instanceof Error ? err.name : "error"})`);
  }
  if (res.status !== 200) {
    await res.body?.cancel();
    throw new PublicKeysUnavailableError(`fetching them answered ${res.status}`);
  }
  const declared = Number(res.headers.get("content-length") ?? 0);
  if (declared > DOCUMENT_LIMIT_BYTES) {
    await res.body?.cancel();
    throw new PublicKeysUnavailableError("the document is larger than 256 KB");
  }
  const text = await res.text();
  if (Buffer.byteLength(text) > DOCUMENT_LIMIT_BYTES) throw new PublicKeysUnavailableError("the document is larger than 256 KB");
  return text;
}

/** The source as logs show it: a URL without its query (it may carry a token), or the file's path. */
export function describeSource(source: PublicKeySource): string {
  return source.kind === "file" ? source.path : `${source.url.origin}${source.url.pathname}`;
}

/** The keys of one source, kept in memory and read again when needed (bounded: see `get`). */
export class PublicKeys {
  private keys = new Map<string, KeyObject>();
  /** When the keys were last read successfully (Unix ms of the service clock); undefined: never. */
  private readAt: number | undefined;
  /** When a read was last tried, and whether it failed. */
  private triedAt: number | undefined;
  private failed: Error | undefined;
  private reading: Promise<void> | undefined;

  constructor(
    readonly source: PublicKeySource,
    private readonly now: () => number,
  ) {}

  /**
   * The key with this identifier. The document is read again first when no copy is held, when the
   * copy is a day old, or when the identifier is unknown; never more than once a minute. Undefined:
   * no such key. Rejects with `PublicKeysUnavailableError` when the key is not held and the
   * document could not be read (the last try failed): the host retries later.
   */
  async get(id: string): Promise<KeyObject | undefined> {
    const now = this.now();
    const stale = this.readAt === undefined || now - this.readAt >= KEYS_MAX_AGE_MS;
    const due = this.triedAt === undefined || now - this.triedAt >= REFRESH_INTERVAL_MS;
    if (due && (stale || !this.keys.has(id))) await this.refresh().catch(() => {});
    const key = this.keys.get(id);
    if (key === undefined && this.failed) throw this.failed;
    return key;
  }

  /** Reads the document now (one read at a time; callers meanwhile share it). Rejects when it fails. */
  refresh(): Promise<void> {
    return (this.reading ??= this.read().finally(() => (this.reading = undefined)));
  }

  private async read(): Promise<void> {
    this.triedAt = this.now();
    try {
      const text = await readDocument(this.source);
      try {
        this.keys = parsePublicKeys(text);
      } catch (err) {
        throw new PublicKeysUnavailableError(`the public keys document is not usable: ${(err as Error).message}`);
      }
      this.readAt = this.now();
      this.failed = undefined;
    } catch (err) {
      this.failed = err instanceof PublicKeysUnavailableError ? err : new PublicKeysUnavailableError(String(err));
      throw this.failed;
    }
  }
}
