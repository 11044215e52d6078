// Types of scripts/distill-openapi.mjs, for the tests that use it.
type Facts = Record<string, Record<string, unknown>>;
export declare const FACTS_FILE: string;
export declare const SOURCE: Readonly<{ repository: string; path: string; commit: string }>;
export declare const OPERATIONS: readonly string[];
export declare function factsOf(schema: unknown, resolveRef?: (ref: string) => unknown): Facts;
export declare function distill(doc: unknown): {
  source: { repository: string; path: string; commit: string };
  operations: Record<string, { request: Facts; response: Facts }>;
};
