// keyguard/web on Node (through @hono/node-server's Request and Response): the conformance suite.
import { webScenario } from "./apps/web-app";
import { conformanceSuite } from "./conformance";
import { serveFetch } from "./serve-node";

conformanceSuite("Web handler on Node", { redis: true, start: (env) => serveFetch(webScenario(env)) });
