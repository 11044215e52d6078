// `keyguard serve --tls-cert --tls-key [--tls-client-ca]` as a child process, with certificates
// made by openssl for this run: it serves HTTPS, SIGHUP swaps the certificate for new connections
// while an open keep-alive connection goes on, and a bad file at SIGHUP keeps the one in use.
import { copyFileSync, writeFileSync } from "node:fs";
import { Agent } from "node:https";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "keyguard/client";
import { liveness, makeTlsFixture, peerCertificate, type TlsFixture } from "../support/tls-certs";
import { GENEROUS } from "../support/time-limits";
import { killChildren, serve } from "./cli-process";

let certs: TlsFixture;
beforeAll(() => {
  certs = makeTlsFixture();
});
afterAll(() => certs.remove());
afterEach(killChildren);

/** The serial of the certificate a new connection is served (trusting our CA). */
const serialOfNewConnection = async (baseUrl: string) => (await peerCertificate(baseUrl, certs.pem(certs.ca))).serialNumber;

describe("keyguard serve over TLS", () => {
  it("serves HTTPS; SIGHUP swaps the certificate for new connections, an open one goes on; a bad file keeps the one in use", async () => {
    const certFile = join(certs.dir, "cli-live.pem");
    const keyFile = join(certs.dir, "cli-live.key");
    copyFileSync(certs.serverCert, certFile);
    copyFileSync(certs.serverKey, keyFile);
    const served = await serve(["--port", "0", "--no-console", "--tls-cert", certFile, "--tls-key", keyFile]);
    let output = served.output;
    served.child.stdout!.on("data", (c: Buffer) => (output += c.toString()));
    served.child.stderr!.on("data", (c: Buffer) => (output += c.toString()));
    expect(served.baseUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(output).toContain(`TLS:          ${certFile}`);

    // A client trusting the CA uses it.
    const client = createClient({ rootKey: served.rootKey!, baseUrl: served.baseUrl, ...GENEROUS, tls: { ca: certs.pem(certs.ca) } });
    const { key } = await client.keys.createKey({ apiId: served.apiId });
    expect(await client.keys.verifyKey({ key })).toMatchObject({ valid: true });

    const agent = new Agent({ keepAlive: true, maxSockets: 1, ca: certs.pem(certs.ca) });
    try {
      const first = await liveness(served.baseUrl, agent);
      expect(first.status).toBe(200);

      copyFileSync(certs.serverCert2, certFile);
      copyFileSync(certs.serverKey2, keyFile);
      served.child.kill("SIGHUP");
      await expect.poll(() => output, { timeout: 30_000 }).toContain("SIGHUP: reloaded the TLS certificate");
      const second = await serialOfNewConnection(served.baseUrl);
      expect(second).not.toBe(first.serial);
      // The keep-alive connection opened before SIGHUP still serves, with the certificate it began with.
      expect(await liveness(served.baseUrl, agent)).toEqual({ status: 200, serial: first.serial, reused: true });
      expect(await client.keys.verifyKey({ key })).toMatchObject({ valid: true });

      // A file that is no certificate: the one in use stays, and the reason is printed naming the flag.
      writeFileSync(certFile, "not a certificate\n");
      served.child.kill("SIGHUP");
      await expect.poll(() => output, { timeout: 30_000 }).toContain("SIGHUP: kept the TLS certificate in use: invalid --tls-cert");
      expect(await serialOfNewConnection(served.baseUrl)).toBe(second);
      expect(served.child.exitCode).toBeNull();
    } finally {
      agent.destroy();
    }
  });

  it("--tls-client-ca: a client without a certificate is refused, one with a certificate the CA signed is served", async () => {
    const served = await serve([
      "--port",
      "0",
      "--no-console",
      "--tls-cert",
      certs.serverCert,
      "--tls-key",
      certs.serverKey,
      "--tls-client-ca",
      certs.clientCa,
    ]);
    expect(served.output).toContain(`client certificates from ${certs.clientCa}`);
    const options = { rootKey: served.rootKey!, baseUrl: served.baseUrl, ...GENEROUS };
    const without = createClient({ ...options, retry: false, tls: { ca: certs.pem(certs.ca) } });
    await expect(without.keys.verifyKey({ key: "sk_anything" })).rejects.toMatchObject({ code: "KEY_SERVICE_NETWORK_ERROR" });
    const withCert = createClient({
      ...options,
      tls: { ca: certs.pem(certs.ca), cert: certs.pem(certs.clientCert), key: certs.pem(certs.clientKey) },
    });
    const { key } = await withCert.keys.createKey({ apiId: served.apiId });
    expect(await withCert.keys.verifyKey({ key })).toMatchObject({ valid: true });
  });
});
