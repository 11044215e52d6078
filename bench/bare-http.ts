// The runtime's limit the key service is compared with: a bare node:http server that reads the
// same JSON body, parses it and answers a verify-shaped JSON (bench/servers.ts, bench/side-by-side.ts).
import http from "node:http";

export function bareVerifyServer(): http.Server {
  return http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { key?: unknown };
      const json = JSON.stringify({
        meta: { requestId: "req_bench" },
        data: { valid: typeof body.key === "string", code: "VALID", keyId: "key_bench", enabled: true },
      });
      res.writeHead(200, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(json) });
      res.end(json);
    });
  });
}
