// keyguard/koa on Koa 3: the conformance suite.
import { koaScenario } from "./apps/koa-app";
import { conformanceSuite } from "./conformance";
import { serveListener } from "./serve-node";

conformanceSuite("Koa", { redis: true, start: (env) => serveListener(koaScenario(env).callback()) });
