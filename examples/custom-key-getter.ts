// Reading the key from somewhere else (here a cookie, or a custom header), answering denials
// yourself, and handing them to the app's error handler instead.
// Keys never go in the URL: query strings end up in access logs, proxies and Referer headers.
// Run: UNKEY_ROOT_KEY=... npx tsx examples/custom-key-getter.ts
import express, { type ErrorRequestHandler, type Request, type Response } from "express";
import { apiKeyAuth, isKeyguardError } from "keyguard";

const app = express();

/** The `api_key` cookie, or undefined when it is absent or not valid percent-encoding. */
function keyFromCookie(req: Request): string | undefined {
  const match = /(?:^|;\s*)api_key=([^;]+)/.exec(req.headers.cookie ?? "");
  if (match?.[1] === undefined) return undefined;
  try {
    return decodeURIComponent(match[1]);
  } catch {
    return undefined; // a malformed cookie counts as no key (401), not a server error
  }
}

/** A custom header, e.g. from a widget that cannot set Authorization. */
function keyFromWidgetHeader(req: Request): string | undefined {
  const value = req.headers["x-widget-key"];
  return typeof value === "string" ? value : undefined;
}

// getKey replaces the Authorization / X-API-Key lookup; it may be async.
app.get(
  "/widget",
  apiKeyAuth<Request, Response>({
    getKey: (req) => keyFromCookie(req) ?? keyFromWidgetHeader(req),
    // onDenied may be async; an error it throws goes to next(err).
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
    res
      .status(err.status)
      .set(err.headers)
      .json({ error: err.code, message: err.expose ? err.message : "internal error" });
    return;
  }
  res.status(500).json({ error: "internal" });
};
app.use(onError);

app.listen(3000, "127.0.0.1", () => console.log("listening on http://127.0.0.1:3000"));
