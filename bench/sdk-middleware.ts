// The baseline the benchmarks compare against: an Express middleware that calls the official
// @unkey/api SDK's verifyKey on every request, written the way the service's docs show it.

import type { NextFunction, Request, Response } from "express";
import { Unkey } from "@unkey/api";

export function sdkMiddleware(options: { rootKey: string; baseUrl: string }) {
  const unkey = new Unkey({ rootKey: options.rootKey, serverURL: options.baseUrl });
  return async (req: Request, res: Response, next: NextFunction) => {
    const key = req.headers.authorization?.replace("Bearer ", "");
    if (!key) {
      res.status(401).json({ error: "Unauthorized" });
      return;
    }
    try {
      const { data } = await unkey.keys.verifyKey({ key });
      if (!data.valid) {
        res.status(401).json({ error: data.code });
        return;
      }
      next();
    } catch {
      res.status(500).json({ error: "Internal Server Error" });
    }
  };
}
