// keyguard/nest on NestJS, with the Express and the Fastify platform: the conformance suite.
import { nestScenario } from "./apps/nest-app";
import { conformanceSuite } from "./conformance";

for (const platform of ["express", "fastify"] as const) {
  conformanceSuite(`NestJS (${platform})`, {
    redis: true,
    async start(env) {
      const app = await nestScenario(env, platform);
      await app.listen(0, "127.0.0.1");
      return { url: (await app.getUrl()).replace("[::1]", "127.0.0.1").replace("localhost", "127.0.0.1"), close: () => app.close() };
    },
  });
}
