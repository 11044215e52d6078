// Reading the key from somewhere else (here a cookie or a query parameter), answering denials
// yourself, and handing them to the app's error handler instead.
// Run: UNKEY_ROOT_KEY=... npx tsx examples/custom-key-getter.ts
import express, { type ErrorRequestHandler, type Request, type Response } from "express";
import { apiKeyAuth, isKeyguardError } from "keyguard";

const app = express();

function keyFromCookie(req: Request): string | undefined {
  const cookie = req.headers.cookie ?? "";
  const match = /(?:^|;\s*)api_key=([^;]+)/.exec(cookie);
  return match?.[1] === undefined ? undefined : decodeURIComponent(match[1]);
}

// getKey replaces the Authorization / X-API-Key lookup; it may be async.
app.get(
  "/widget",
  apiKeyAuth<Request, Response>({
    getKey: (req) => keyFromCookie(req) ?? (typeof req.query.key === "string" ? req.query.key : undefined),
    onDenied: (err, _req, res) => {
      // err.status, err.headers (WWW-Authenticate, Retry-After…), err.code, err.expose
      res.status(err.status).set(err.headers).send(`<p>Access denied (${err.code})</p>`);
    },
  }),
  (req, res) => {
    res.send(`<p>Hello ${req.apiKey?.name ?? "caller"}</p>`);
  },
);

// passErrors: denials become next(err) for the app's error handler.
app.get("/api/data", apiKeyAuth({ passErrors: true }), (_req, res) => {
  res.json({ data: 42 });
});

const onError: ErrorRequestHandler = (err, _req, res, _next) => {
  if (isKeyguardError(err)) {
    res.status(err.status).set(err.headers).json({ error: err.code, message: err.expose ? err.message : "internal error" });
    return;
  }
  res.status(500).json({ error: "internal" });
};
app.use(onError);

app.listen(3000, "127.0.0.1", () => console.log("listening on http://127.0.0.1:3000"));
