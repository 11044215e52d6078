// The hosted portal's pure parts: the cookies the code exchange sets (Secure behind TLS) and the
// same-origin check of the pages' endpoint.
import type { IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import { refuseOtherOrigins, sessionCookies } from "../../../src/server/http/portal-pages";

const request = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;

describe("portal pages", () => {
  it("sets the token HttpOnly, SameSite=Strict, Path=/portal, Secure only behind TLS", () => {
    const [token, back] = sessionCookies("pat_a_b", "https://app.example.com/settings", true);
    expect(token).toBe("portal_session=pat_a_b; Path=/portal; Max-Age=86400; HttpOnly; SameSite=Strict; Secure");
    expect(back).toBe(
      "portal_return=https%3A%2F%2Fapp.example.com%2Fsettings; Path=/portal; Max-Age=86400; HttpOnly; SameSite=Strict; Secure",
    );
    const [plain, none] = sessionCookies("pat_a_b", undefined, false);
    expect(plain).not.toContain("Secure");
    expect(none).toBe("portal_return=; Path=/portal; Max-Age=0; HttpOnly; SameSite=Strict");
  });

  it("answers the service's own origin only", () => {
    const own = "https://keys.example.com";
    expect(() => refuseOtherOrigins(request({ origin: own, "sec-fetch-site": "same-origin" }), own)).not.toThrow();
    expect(() => refuseOtherOrigins(request({ origin: own }), own)).not.toThrow();
    const refused: Array<Record<string, string>> = [
      {},
      { origin: "https://evil.example" },
      { origin: own, "sec-fetch-site": "same-site" },
      { origin: own, "sec-fetch-site": "cross-site" },
    ];
    for (const headers of refused) {
      expect(() => refuseOtherOrigins(request(headers), own), JSON.stringify(headers)).toThrow(
        expect.objectContaining({ kind: "authorization.forbidden", status: 403 }),
      );
    }
  });
});
