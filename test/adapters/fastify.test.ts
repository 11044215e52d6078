// keyguard/fastify on Fastify 5: the conformance suite.
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fastifyScenario } from "./apps/fastify-app";
import { conformanceSuite } from "./conformance";

conformanceSuite("Fastify", {
  redis: true,
  async start(env) {
    const app = await fastifyScenario(env);
    await app.listen({ port: 0, host: "127.0.0.1" });
    const { port } = (app.server as Server).address() as AddressInfo;
    return { url: `http://127.0.0.1:${port}`, close: () => app.close() };
  },
});
