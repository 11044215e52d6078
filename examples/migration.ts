// Moving an app from another key service (the hosted one) to your own keyguard service without a
// cut-over day (docs/migration.md): every request is verified by keyguard's service; a key it does
// not know yet is looked up once at the old service and imported, then verified here. Until the
// old service is switched off, a sample of the verifications is compared with it (shadow).
// Run: UNKEY_ROOT_KEY=… UNKEY_BASE_URL=http://127.0.0.1:8787 OLD_ROOT_KEY=… OLD_API_ID=api_…
//      API_ID=api_… MIGRATION_ID=mig_… npx tsx examples/migration.ts
import express from "express";
import { apiKeyAuth, type ShadowDisagreement } from "keyguard";

const env = (name: string): string => {
  const value = process.env[name];
  if (value === undefined || value === "") throw new Error(`set ${name}`);
  return value;
};

const old = { baseUrl: process.env.OLD_BASE_URL ?? "https://api.unkey.com", rootKey: env("OLD_ROOT_KEY") };

const app = express();
app.use(
  "/api",
  apiKeyAuth({
    // keyguard's own service: UNKEY_ROOT_KEY (with create_key on API_ID) and UNKEY_BASE_URL.
    migrateFrom: {
      ...old,
      apiId: env("OLD_API_ID"),
      intoApiId: env("API_ID"),
      migrationId: env("MIGRATION_ID"),
      // After this day, an unknown key is just unknown.
      until: new Date("2027-06-30T00:00:00Z"),
    },
    shadow: {
      ...old,
      sample: 0.05,
      onDisagreement: (report: ShadowDisagreement) => {
        console.log("disagreement", report.fields.join(","), report.primary.keyId, report.shadow.keyId);
      },
    },
  }),
);
app.get("/api/hello", (req, res) => {
  res.json({ hello: req.apiKey?.keyId });
});

app.listen(Number(process.env.PORT ?? 3000), "127.0.0.1", () => {
  console.log("listening on http://127.0.0.1:3000/api/hello");
});
