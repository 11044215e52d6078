// The analytics.* operation: SQL over the verification events of the root key's workspace.
import * as Type from "typebox";
import { freeForm, strict } from "./fields";

export const GetVerificationsRequest = strict({
  /**
   * SQL over `key_verifications_v1`, e.g.
   * `SELECT outcome, count(*) AS total FROM key_verifications_v1 WHERE time >= now() - INTERVAL 1 DAY GROUP BY outcome`.
   * Its length limit is checked by the query's parser (production's invalid_analytics_query), not here.
   */
  query: Type.String({ maxLength: 1_000_000 }),
});

/** One row of an analytics answer: the selected columns by name (numbers as numbers, `tags` as an array). */
export const AnalyticsRow = freeForm();

export const analyticsOperations = {
  "analytics.getVerifications": { request: GetVerificationsRequest, response: Type.Array(AnalyticsRow) },
} as const;
