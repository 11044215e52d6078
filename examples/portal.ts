// "Settings → API keys" for a signed-in user: one route that mints a customer portal session for
// them and redirects to it (docs/portal.md). The user's own keys, usage and docs are then in the
// portal; your app never handles their keys.
// Run: UNKEY_ROOT_KEY=... UNKEY_BASE_URL=http://127.0.0.1:8787 KEYGUARD_PORTAL=portal_... npx tsx examples/portal.ts
import express, { type Express } from "express";
import { createClient, type KeyServiceClient } from "keyguard/client";

/** Your app: here the signed-in user is a header your login middleware would set. */
export function portalApp(client: KeyServiceClient, portalId: string, returnUrl: string): Express {
  const app = express();
  app.get("/settings/api-keys", async (req, res, next) => {
    try {
      const user = req.header("x-user-id");
      if (user === undefined) return void res.redirect(303, "/login");
      // The root key needs portal.<id>.create_portal_session, and each scope's permissions on the portal's APIs.
      const { url } = await client.portal.createSession({
        portal: portalId,
        externalId: user,
        scopes: ["keys:read", "keys:reroll", "keys:create", "analytics:read"],
        returnUrl,
      });
      // The URL carries a single-use code: never cache the redirect, never log it.
      res.set("Cache-Control", "no-store").redirect(303, url);
    } catch (err) {
      next(err);
    }
  });
  return app;
}

if (process.argv[1]?.endsWith("portal.ts")) {
  const port = Number(process.env.PORT ?? 3000);
  const client = createClient();
  const app = portalApp(client, process.env.KEYGUARD_PORTAL ?? "", `http://127.0.0.1:${port}/settings`);
  app.listen(port, "127.0.0.1", () => console.log(`listening on http://127.0.0.1:${port}`));
}
