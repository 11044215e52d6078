// keyguard/hono on Node (@hono/node-server): the conformance suite.
import { honoScenario } from "./apps/hono-app";
import { conformanceSuite } from "./conformance";
import { serveFetch } from "./serve-node";

conformanceSuite("Hono on Node", { redis: true, start: (env) => serveFetch(honoScenario(env).fetch) });
