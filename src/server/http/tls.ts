// HTTPS of startLocalKeyService (`keyguard serve --tls-cert --tls-key [--tls-client-ca]`): the
// certificate chain, its private key and the CA of the clients' certificates, read from their files
// and checked together before they are used, at start and at each reload. Never echoes a file's
// content (the key is a secret): a message names the option, the path and what is wrong.
import { readFileSync } from "node:fs";
import { createSecureContext, type SecureContextOptions } from "node:tls";
import { serviceChecks } from "../errors";
import type { LocalServiceConfig } from "../options";

export type TlsFiles = NonNullable<LocalServiceConfig["tls"]>;

const check = serviceChecks();

/** The first line of OpenSSL's reason, without its error-code prefix. */
function reasonOf(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.split("\n")[0]!.replace(/^error:[0-9A-F]+:/i, "");
}

function readPem(option: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    return check.invalid(option, file, `The file cannot be read (${(err as NodeJS.ErrnoException).code ?? "error"}).`);
  }
}

/** Throws a config error naming `option` when `context` cannot be made. */
function tryContext(option: string, file: string, context: SecureContextOptions, what: string): void {
  try {
    createSecureContext(context);
  } catch (err) {
    check.invalid(option, file, `${what} (${reasonOf(err)}).`);
  }
}

/**
 * The server's TLS settings from `files`, read now and checked: each file parses, and the key is
 * the certificate's. With a client CA, a client must present a certificate it signed.
 */
export function readTls(files: TlsFiles): SecureContextOptions {
  const cert = readPem("tls.certFile", files.certFile);
  const key = readPem("tls.keyFile", files.keyFile);
  const ca = files.clientCaFile === undefined ? undefined : readPem("tls.clientCaFile", files.clientCaFile);
  tryContext("tls.certFile", files.certFile, { cert }, "It holds no PEM certificate");
  tryContext("tls.keyFile", files.keyFile, { key }, "It holds no PEM private key, or an encrypted one");
  if (ca !== undefined) tryContext("tls.clientCaFile", files.clientCaFile!, { ca }, "It holds no PEM CA certificate");
  tryContext("tls.keyFile", files.keyFile, { cert, key }, "It is not the key of the certificate in tls.certFile");
  return { cert, key, ...(ca !== undefined && { ca }) };
}
