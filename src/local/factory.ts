// createLocalKeyService: the service core and its Express app, without listening. Mount the
// app anywhere (`outer.use("/prefix", app)`) or hand it to supertest.
import type { Express } from "express";
import { createApp } from "./app";
import { parseOptions, type LocalKeyServiceOptions } from "./options";
import { ServiceCore, type LocalKeyService } from "./service";

export interface LocalKeyServiceInstance {
  /** Express app serving `POST /v2/<group>.<operation>` and `GET /v2/liveness`. */
  app: Express;
  /** The admin surface: bootstrap ids and root key, createWorkspace/createApi/createRootKey, faults, snapshot. */
  service: LocalKeyService;
}

export function createLocalKeyService(options?: LocalKeyServiceOptions): LocalKeyServiceInstance {
  const core = new ServiceCore(parseOptions(options));
  core.commitBootstrap();
  return { app: createApp(core), service: core };
}
