// Express 5 and apiKeyAuth(): the conformance suite (the existing behaviour every adapter matches).
import { expressScenario } from "./apps/express-app";
import { conformanceSuite } from "./conformance";
import { serveListener } from "./serve-node";

conformanceSuite("Express", { redis: true, start: (env) => serveListener(expressScenario(env)) });
