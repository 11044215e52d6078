// HTTPS and mutual TLS of startLocalKeyService, with certificates made by openssl for this run:
// the client and apiKeyAuth() trust a CA of their own and present a client certificate; a
// certificate of an untrusted CA, or no client certificate where one is required, is refused; a
// reload swaps the certificate for new connections while an open keep-alive connection goes on,
// and a reload from a bad file keeps the certificate in use. The hosted portal's session cookie is Secure
// behind TLS.
import { copyFileSync } from "node:fs";
import { get as httpGet } from "node:http";
import { Agent, get as httpsGet } from "node:https";
import { join } from "node:path";
import express from "express";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiKeyAuth, silentLogger } from "keyguard";
import { createClient } from "keyguard/client";
import { createFetchClient } from "../../../src/client/fetch-client";
import { startLocalKeyService, type RunningLocalKeyService } from "keyguard/server";
import { liveness, makeTlsFixture, peerCertificate as certificateOf, type TlsFixture } from "../../support/tls-certs";
import { GENEROUS } from "../../support/time-limits";

let certs: TlsFixture;
beforeAll(() => {
  certs = makeTlsFixture();
});
afterAll(() => certs.remove());

const started: RunningLocalKeyService[] = [];
afterAll(() => Promise.all(started.map((s) => s.close())));

async function start(tls: { certFile: string; keyFile: string; clientCaFile?: string }): Promise<RunningLocalKeyService> {
  const running = await startLocalKeyService({ tls, logger: silentLogger });
  started.push(running);
  return running;
}

/** The certificate the service presents to a new connection (trusting its CA). */
const peerCertificate = (baseUrl: string, extra: { cert?: string; key?: string } = {}) =>
  certificateOf(baseUrl, certs.pem(certs.ca), extra);

describe("HTTPS", () => {
  it("serves HTTPS: createClient() with the CA verifies a key; the service says it is secure", async () => {
    const running = await start({ certFile: certs.serverCert, keyFile: certs.serverKey });
    expect(running.baseUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(running.secure).toBe(true);
    expect(running.service.secure).toBe(true);
    const client = createClient({ rootKey: running.rootKey, baseUrl: running.baseUrl, ...GENEROUS, tls: { ca: certs.pem(certs.ca) } });
    const { key } = await client.keys.createKey({ apiId: running.apiId });
    expect(await client.keys.verifyKey({ key })).toMatchObject({ valid: true, code: "VALID" });
  });

  it("a plain HTTP service says it is not secure", async () => {
    const running = await startLocalKeyService({ logger: silentLogger });
    started.push(running);
    expect([running.secure, running.service.secure, running.baseUrl.startsWith("http://")]).toEqual([false, false, true]);
    expect(() => running.reloadTls()).toThrow(/reloadTls\(\) needs the tls option/);
  });

  it("a client that does not trust the CA is refused with an error naming the certificate problem", async () => {
    const running = await start({ certFile: certs.serverCert, keyFile: certs.serverKey });
    const untrusting = createClient({ rootKey: running.rootKey, baseUrl: running.baseUrl, ...GENEROUS, retry: false });
    const err = await untrusting.keys.verifyKey({ key: "sk_whatever" }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "KEY_SERVICE_NETWORK_ERROR" });
    expect((err as Error).message).toMatch(
      /could not reach the key service at https:\/\/127\.0\.0\.1:\d+\/v2\/keys\.verifyKey \(its TLS certificate is not signed by a trusted CA \([A-Z_]+\): pass the CA that signed it as tls: \{ ca \}\)/,
    );
    expect((err as Error & { cause: { code?: string } }).cause.code).toMatch(
      /SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT/,
    );
    // A service whose certificate another CA signed is refused by a client trusting ours.
    const other = await start({ certFile: certs.otherCert, keyFile: certs.otherKey });
    const trusting = createClient({
      rootKey: other.rootKey,
      baseUrl: other.baseUrl,
      ...GENEROUS,
      retry: false,
      tls: { ca: certs.pem(certs.ca) },
    });
    await expect(trusting.keys.verifyKey({ key: "sk_whatever" })).rejects.toMatchObject({ code: "KEY_SERVICE_NETWORK_ERROR" });
  });

  it("a certificate and key that do not belong together, or unreadable files, stop the start naming the option", async () => {
    await expect(startLocalKeyService({ tls: { certFile: certs.serverCert, keyFile: certs.serverKey2 } })).rejects.toThrow(
      /invalid option tls\.keyFile = ".*server2\.key"\. It is not the key of the certificate in tls\.certFile/,
    );
    await expect(startLocalKeyService({ tls: { certFile: join(certs.dir, "none.pem"), keyFile: certs.serverKey } })).rejects.toThrow(
      /invalid option tls\.certFile = ".*none\.pem"\. The file cannot be read \(ENOENT\)/,
    );
    await expect(startLocalKeyService({ tls: { certFile: certs.serverKey, keyFile: certs.serverKey } })).rejects.toThrow(
      /invalid option tls\.certFile = .*It holds no PEM certificate/,
    );
    const err = await startLocalKeyService({ tls: { certFile: certs.serverCert, keyFile: certs.serverCert } }).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/invalid option tls\.keyFile = .*It holds no PEM private key/);
    // Never the key's content.
    expect((err as Error).message).not.toContain("PRIVATE KEY");
    await expect(startLocalKeyService({ tls: { certFile: certs.serverCert } as never })).rejects.toThrow(
      /invalid option tls\.keyFile = undefined/,
    );
  });
});

describe("the hosted portal behind TLS", () => {
  it("the code exchange sets the session cookie Secure (and HttpOnly, SameSite=Strict); plain HTTP does not", async () => {
    const cookiesOf = async (running: RunningLocalKeyService, agent?: Agent) => {
      const client = createClient({ rootKey: running.rootKey, baseUrl: running.baseUrl, ...GENEROUS, tls: { ca: certs.pem(certs.ca) } });
      const { key } = await client.keys.createKey({ apiId: running.apiId, externalId: "cust-1" });
      expect(key).toBeTruthy();
      const portal = await client.portal.createPortal({
        name: "Acme",
        apiIds: [running.apiId],
        returnOrigins: ["https://app.example.com"],
      });
      const session = await client.portal.createSession({
        portal: portal.portalId,
        externalId: "cust-1",
        scopes: ["keys:read"],
        returnUrl: "https://app.example.com/settings",
      });
      // The URL is the service's own origin (https behind TLS).
      expect(new URL(session.url).protocol).toBe(new URL(running.baseUrl).protocol);
      const res = await new Promise<{ status: number; cookies: string[] }>((resolve, reject) => {
        const req = (agent ? httpsGet : httpGet)(session.url, agent ? { agent } : {}, (r) => {
          r.resume();
          resolve({ status: r.statusCode!, cookies: r.headers["set-cookie"] ?? [] });
        });
        req.once("error", reject);
      });
      await client.close();
      return res;
    };
    const secure = await startLocalKeyService({
      tls: { certFile: certs.serverCert, keyFile: certs.serverKey },
      console: true,
      logger: silentLogger,
    });
    const plain = await startLocalKeyService({ console: true, logger: silentLogger });
    started.push(secure, plain);
    const overTls = await cookiesOf(secure, new Agent({ ca: certs.pem(certs.ca) }));
    expect(overTls.status).toBe(303);
    const token = overTls.cookies.find((c) => c.startsWith("portal_session=pat_"));
    expect(token).toMatch(/; Path=\/portal; Max-Age=86400; HttpOnly; SameSite=Strict; Secure$/);
    const overHttp = await cookiesOf(plain);
    expect(overHttp.status).toBe(303);
    const plainToken = overHttp.cookies.find((c) => c.startsWith("portal_session=pat_"));
    expect(plainToken).toMatch(/; HttpOnly; SameSite=Strict$/);
  });
});

describe("mutual TLS", () => {
  let running: RunningLocalKeyService;
  beforeAll(async () => {
    running = await start({ certFile: certs.serverCert, keyFile: certs.serverKey, clientCaFile: certs.clientCa });
  });

  it("a client without a certificate is refused; with one the client CA signed it is served", async () => {
    const without = createClient({
      rootKey: running.rootKey,
      baseUrl: running.baseUrl,
      ...GENEROUS,
      retry: false,
      tls: { ca: certs.pem(certs.ca) },
    });
    const refused = (await without.keys.verifyKey({ key: "sk_whatever" }).catch((e: unknown) => e)) as Error;
    // TLS 1.3: the handshake ends on the client's side before the service checks its (absent)
    // certificate; the service then closes the connection, which undici reports.
    expect(refused).toMatchObject({ code: "KEY_SERVICE_NETWORK_ERROR" });
    expect(refused.message).toMatch(
      /could not reach the key service at https:\/\/127\.0\.0\.1:\d+\/v2\/keys\.verifyKey \((UND_ERR_SOCKET|ECONNRESET|it refused the TLS handshake.*)\)/,
    );
    // A certificate of another CA is no better.
    const wrong = createClient({
      rootKey: running.rootKey,
      baseUrl: running.baseUrl,
      ...GENEROUS,
      retry: false,
      tls: { ca: certs.pem(certs.ca), cert: certs.pem(certs.otherCert), key: certs.pem(certs.otherKey) },
    });
    await expect(wrong.keys.verifyKey({ key: "sk_whatever" })).rejects.toMatchObject({ code: "KEY_SERVICE_NETWORK_ERROR" });
    const withCert = createClient({
      rootKey: running.rootKey,
      baseUrl: running.baseUrl,
      ...GENEROUS,
      tls: { ca: certs.pem(certs.ca), cert: certs.pem(certs.clientCert), key: certs.pem(certs.clientKey) },
    });
    const { key } = await withCert.keys.createKey({ apiId: running.apiId });
    expect(await withCert.keys.verifyKey({ key })).toMatchObject({ valid: true });
  });

  it("apiKeyAuth({ tls }) reaches the service with the client certificate", async () => {
    const admin = createClient({
      rootKey: running.rootKey,
      baseUrl: running.baseUrl,
      ...GENEROUS,
      tls: { ca: certs.pem(certs.ca), cert: certs.pem(certs.clientCert), key: certs.pem(certs.clientKey) },
    });
    const { key } = await admin.keys.createKey({ apiId: running.apiId });
    const app = express();
    const options = { rootKey: running.rootKey, baseUrl: running.baseUrl, ...GENEROUS, logger: silentLogger, cache: false as const };
    app.get(
      "/with",
      apiKeyAuth({ ...options, tls: { ca: certs.pem(certs.ca), cert: certs.pem(certs.clientCert), key: certs.pem(certs.clientKey) } }),
      (_req, res) => {
        res.send("ok");
      },
    );
    app.get("/without", apiKeyAuth({ ...options, tls: { ca: certs.pem(certs.ca) }, retry: false }), (_req, res) => {
      res.send("ok");
    });
    await request(app).get("/with").set("Authorization", `Bearer ${key}`).expect(200, "ok");
    await request(app).get("/without").set("Authorization", `Bearer ${key}`).expect(503);
  });
});

describe("the tls option of the client and apiKeyAuth()", () => {
  it("is refused over fetch, with the reason; cert without key is refused; the key is never shown", () => {
    const base = { rootKey: "root_test_key_123", baseUrl: "https://127.0.0.1:1" };
    expect(() => createFetchClient({ ...base, tls: { ca: "x" } })).toThrow(
      /tls applies to the default transport \(undici\), not to a fetch/,
    );
    expect(() => createClient({ ...base, fetch, tls: { ca: "x" } })).toThrow(/not to a fetch/);
    expect(() => createClient({ ...base, tls: { cert: "-----BEGIN CERTIFICATE-----" } })).toThrow(/pass tls\.cert and tls\.key together/);
    const err = (() => {
      try {
        createClient({ ...base, tls: { cert: "c", key: 42 as never } });
      } catch (e) {
        return e as Error;
      }
    })();
    expect(err?.message).toMatch(/invalid option tls\.key = <hidden>/);
    expect(() => apiKeyAuth({ client: createClient(base), tls: { ca: "x" } })).toThrow(/tls is for the client apiKeyAuth\(\) builds/);
  });
});

describe("reloadTls()", () => {
  it("new connections get the new certificate, an open keep-alive connection goes on; a bad file keeps the one in use", async () => {
    const certFile = join(certs.dir, "live.pem");
    const keyFile = join(certs.dir, "live.key");
    copyFileSync(certs.serverCert, certFile);
    copyFileSync(certs.serverKey, keyFile);
    const running = await start({ certFile, keyFile });
    const first = (await peerCertificate(running.baseUrl)).serialNumber;
    const agent = new Agent({ keepAlive: true, maxSockets: 1, ca: certs.pem(certs.ca) });
    try {
      const before = await liveness(running.baseUrl, agent);
      expect(before).toMatchObject({ status: 200, serial: first });

      copyFileSync(certs.serverCert2, certFile);
      copyFileSync(certs.serverKey2, keyFile);
      running.reloadTls();
      const second = (await peerCertificate(running.baseUrl)).serialNumber;
      expect(second).not.toBe(first);
      // The connection opened before the reload is still the one used, with its certificate.
      const after = await liveness(running.baseUrl, agent);
      expect(after).toEqual({ status: 200, serial: first, reused: true });

      // A certificate whose key is not there: refused, the certificate in use stays.
      copyFileSync(certs.serverCert, certFile);
      expect(() => running.reloadTls()).toThrow(/invalid option tls\.keyFile = .*It is not the key of the certificate in tls\.certFile/);
      expect((await peerCertificate(running.baseUrl)).serialNumber).toBe(second);
    } finally {
      agent.destroy();
    }
  });
});
