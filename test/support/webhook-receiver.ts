// A webhook receiver in a process of its own, for the webhook tests: listens on 127.0.0.1 (a spare
// port, loopback-ports.ts), prints `{"port": n}`, then one JSON line per request received (its
// webhook-* headers and body).
// RECEIVER_FAIL_FIRST=n answers 500 to the first n requests (then 204); RECEIVER_STATUS=s answers s
// to every request; RECEIVER_PORT=p listens on that port instead (a receiver back where it was).
import { createServer } from "node:http";
import { listenOn, listenOnSparePort } from "./loopback-ports";

let failLeft = Number(process.env.RECEIVER_FAIL_FIRST ?? 0);
const fixed = process.env.RECEIVER_STATUS === undefined ? undefined : Number(process.env.RECEIVER_STATUS);

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    const status = fixed ?? (failLeft-- > 0 ? 500 : 204);
    process.stdout.write(
      `${JSON.stringify({
        method: req.method,
        path: req.url,
        id: req.headers["webhook-id"],
        timestamp: req.headers["webhook-timestamp"],
        signature: req.headers["webhook-signature"],
        body: Buffer.concat(chunks).toString("utf8"),
        status,
      })}\n`,
    );
    res.writeHead(status, status === 302 ? { location: "http://example.com/" } : {}).end();
  });
});
// Not listen(0): a receiver that goes away and comes back on its port must find it free.
const wanted = process.env.RECEIVER_PORT;
let port: number;
if (wanted === undefined) port = await listenOnSparePort(server);
else await listenOn(server, (port = Number(wanted)));
process.stdout.write(`${JSON.stringify({ port })}\n`);
