// Certificates for the TLS tests, made by `openssl` at test time in a temporary folder: a CA, two
// server certificates it signed for 127.0.0.1 and localhost (to swap one for the other), a client
// CA with a client certificate, and a second CA nobody trusts with a server certificate of its own.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request as httpsRequest, type Agent } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type PeerCertificate, type TLSSocket } from "node:tls";

export interface TlsFixture {
  dir: string;
  /** File paths. */
  ca: string;
  serverCert: string;
  serverKey: string;
  /** A second certificate for the same names, signed by the same CA (another serial). */
  serverCert2: string;
  serverKey2: string;
  clientCa: string;
  clientCert: string;
  clientKey: string;
  /** A CA no one trusts, and a server certificate it signed. */
  otherCa: string;
  otherCert: string;
  otherKey: string;
  /** A file's content. */
  pem(file: string): string;
  remove(): void;
}

function openssl(dir: string, args: string[]): void {
  execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
}

function makeCa(dir: string, name: string): void {
  openssl(
    dir,
    ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"].concat([
      "-keyout",
      `${name}.key`,
      "-out",
      `${name}.pem`,
      "-days",
      "2",
      "-subj",
      `/CN=keyguard test ${name}`,
    ]),
  );
}

function makeLeaf(dir: string, ca: string, name: string, ext: string): void {
  writeFileSync(join(dir, `${name}.ext`), ext);
  openssl(dir, [
    "req",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.csr`,
    "-subj",
    `/CN=${name}`,
  ]);
  openssl(
    dir,
    ["x509", "-req", "-in", `${name}.csr`, "-CA", `${ca}.pem`, "-CAkey", `${ca}.key`, "-CAcreateserial", "-days", "2"].concat([
      "-extfile",
      `${name}.ext`,
      "-out",
      `${name}.pem`,
    ]),
  );
}

const SERVER_EXT = "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n";
const CLIENT_EXT = "extendedKeyUsage=clientAuth\n";

/** Makes the certificates (a few hundred ms of openssl). */
export function makeTlsFixture(): TlsFixture {
  const dir = mkdtempSync(join(tmpdir(), "keyguard-tls-"));
  makeCa(dir, "ca");
  makeLeaf(dir, "ca", "server", SERVER_EXT);
  makeLeaf(dir, "ca", "server2", SERVER_EXT);
  makeCa(dir, "client-ca");
  makeLeaf(dir, "client-ca", "client", CLIENT_EXT);
  makeCa(dir, "other-ca");
  makeLeaf(dir, "other-ca", "other", SERVER_EXT);
  const at = (f: string) => join(dir, f);
  return {
    dir,
    ca: at("ca.pem"),
    serverCert: at("server.pem"),
    serverKey: at("server.key"),
    serverCert2: at("server2.pem"),
    serverKey2: at("server2.key"),
    clientCa: at("client-ca.pem"),
    clientCert: at("client.pem"),
    clientKey: at("client.key"),
    otherCa: at("other-ca.pem"),
    otherCert: at("other.pem"),
    otherKey: at("other.key"),
    pem: (file) => readFileSync(file, "utf8"),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** The certificate a service presents to a new connection (trusting `ca`; presenting `cert` and `key` when given). */
export function peerCertificate(baseUrl: string, ca: string, extra: { cert?: string; key?: string } = {}): Promise<PeerCertificate> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port), ca, ...extra }, () => {
      resolve(socket.getPeerCertificate());
      socket.end();
    });
    socket.once("error", reject);
  });
}

/** GET /v2/liveness over `agent` (a keep-alive connection when the agent keeps one): the status, the serial seen, whether the connection was reused. */
export function liveness(baseUrl: string, agent: Agent): Promise<{ status: number; serial: string; reused: boolean }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(`${baseUrl}/v2/liveness`, { agent }, (res) => {
      // Read before the end: then the socket goes back to the agent.
      const serial = (res.socket as TLSSocket).getPeerCertificate().serialNumber;
      res.resume();
      res.once("end", () => resolve({ status: res.statusCode!, serial, reused: req.reusedSocket }));
    });
    req.once("error", reject);
    req.end();
  });
}
