// keyguard/nest: ApiKeyGuard verifies the key, requirePermissions() checks it, the exception filter
// answers denials with problem+json. Written without decorator syntax so it runs as it is with tsx;
// in a Nest project write @Controller, @Get, @UseGuards and @ApiKey() as usual.
// Run: UNKEY_ROOT_KEY=... [UNKEY_BASE_URL=...] npx tsx examples/frameworks/nest.ts
import "reflect-metadata";
import { Controller, Get, HttpCode, Module, Post, UseGuards } from "@nestjs/common";
import { NestFactory } from "@nestjs/core";
import { ApiKey, ApiKeyGuard, KeyguardExceptionFilter, requirePermissions, type VerifiedKey } from "keyguard/nest";

class DocsController {
  hello(key: VerifiedKey | undefined) {
    return { hello: key?.name ?? key?.keyId };
  }
  save() {
    return { saved: true };
  }
}
const auth = new ApiKeyGuard(); // UNKEY_ROOT_KEY and UNKEY_BASE_URL from the environment
const method = (name: "hello" | "save") => Object.getOwnPropertyDescriptor(DocsController.prototype, name)!;
Get("hello")(DocsController.prototype, "hello", method("hello")); // @Get("hello")
ApiKey()(DocsController.prototype, "hello", 0); // hello(@ApiKey() key)
Post("docs")(DocsController.prototype, "save", method("save")); // @Post("docs")
HttpCode(200)(DocsController.prototype, "save", method("save")); // @HttpCode(200)
UseGuards(requirePermissions("docs.write"))(DocsController.prototype, "save", method("save"));
UseGuards(auth)(DocsController); // @UseGuards(auth) on the class: every route
Controller("api")(DocsController); // @Controller("api")

class HealthController {
  health() {
    return "ok";
  }
}
Get("health")(HealthController.prototype, "health", Object.getOwnPropertyDescriptor(HealthController.prototype, "health")!);
Controller()(HealthController); // not protected

class AppModule {}
Module({ controllers: [DocsController, HealthController] })(AppModule);

const app = await NestFactory.create(AppModule, { logger: ["error"] });
app.useGlobalFilters(new KeyguardExceptionFilter());
await app.listen(Number(process.env.PORT ?? 3000), "127.0.0.1");
console.log(`listening on ${(await app.getUrl()).replace("[::1]", "127.0.0.1")}`);
