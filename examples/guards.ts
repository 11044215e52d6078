// Per-route requirements: a permission query checked by the key service, and guards that check
// the verified key locally (no extra service call).
// Run: UNKEY_ROOT_KEY=... npx tsx examples/guards.ts
import express, { type Request } from "express";
import { apiKeyAuth, requireAnyPermission, requireKey, requirePermissions, requireRoles } from "keyguard";

const app = express();
app.use(express.json());

// One verification per request, shared by every route below.
const auth = apiKeyAuth({ realm: "documents" });

// Checked locally against the permissions the verification returned (direct and via roles).
app.get("/documents", auth, requireAnyPermission("documents.read", "documents.admin"), (_req, res) => {
  res.json([{ id: "1", title: "Hello" }]);
});
app.post("/documents", auth, requirePermissions("documents.write AND (documents.read OR documents.admin)"), (_req, res) => {
  res.status(201).json({ id: "2" });
});
app.delete("/documents/:id", auth, requireRoles("admin"), (req, res) => {
  res.json({ deleted: req.params.id });
});
app.get(
  "/reports",
  auth,
  requireKey((key) => key.meta?.plan === "pro", { description: "a pro plan" }),
  (_req, res) => {
    res.json({ report: "…" });
  },
);

// Or let the key service evaluate the query (computed per request) as part of the verification;
// each such route verifies on its own.
app.get("/projects/:id", apiKeyAuth<Request>({ permissions: (req) => `projects.${req.params.id}.read` }), (req, res) => {
  res.json({ project: req.params.id });
});

app.listen(3000, "127.0.0.1", () => console.log("listening on http://127.0.0.1:3000"));
