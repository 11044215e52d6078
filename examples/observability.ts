// Seeing what apiKeyAuth() decides: an onDecision hook that counts outcomes, and OpenTelemetry spans
// for the calls to the key service, printed to the console here (use an OTLP exporter in production).
// Needs: npm install @opentelemetry/api @opentelemetry/sdk-trace-base
// Run: UNKEY_ROOT_KEY=... [UNKEY_BASE_URL=...] npx tsx examples/observability.ts
import { BasicTracerProvider, ConsoleSpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import express from "express";
import { apiKeyAuth, type AuthDecision } from "keyguard";

// Per outcome, code and source, e.g. "admitted VALID cache" or "denied NOT_FOUND service".
const counts = new Map<string, number>();
let serviceMsTotal = 0;
let serviceCalls = 0;

function onDecision(d: AuthDecision): void {
  const label = `${d.outcome} ${d.code} ${d.source}`;
  counts.set(label, (counts.get(label) ?? 0) + 1);
  if (d.serviceMs !== undefined) {
    serviceMsTotal += d.serviceMs;
    serviceCalls++;
  }
}

// A provider of its own (not registered globally); `telemetry: true` would use NodeSDK's instead.
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(new ConsoleSpanExporter())] });

const app = express();
app.use("/api", apiKeyAuth({ onDecision, telemetry: { tracerProvider } }));
app.get("/api/hello", (_req, res) => {
  res.json({ hello: "world" });
});
app.get("/decisions", (_req, res) => {
  res.json({ counts: Object.fromEntries(counts), serviceMsAverage: serviceCalls === 0 ? null : serviceMsTotal / serviceCalls });
});

const port = Number(process.env.PORT ?? 3000);
app.listen(port, "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${port}; GET /decisions shows the counts`);
});
