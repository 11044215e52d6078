// Optional authentication: anonymous callers get the public view, callers with a valid key get
// more. A key that is sent but invalid is still refused (401).
// Run: UNKEY_ROOT_KEY=... npx tsx examples/optional-auth.ts
import express from "express";
import { apiKeyAuth } from "keyguard";

const app = express();

app.get("/articles", apiKeyAuth({ optional: true }), (req, res) => {
  if (req.apiKey === undefined) {
    res.json({ articles: ["public"], plan: "anonymous" });
    return;
  }
  res.json({ articles: ["public", "premium"], plan: req.apiKey.meta?.plan ?? "member" });
});

app.listen(3000, "127.0.0.1", () => console.log("listening on http://127.0.0.1:3000"));
