// Time limits for tests that check what happens (a status, a code, a header), not how fast: far above
// what a loaded machine needs. With apiKeyAuth()'s defaults (1 s per attempt, 2.5 s in all) a machine
// busy with other work (load 15 on 2 cores) turned expected 200/401/403 answers into 503
// KEY_SERVICE_TIMEOUT. Tests about time limits set their own short ones, against a service that
// never answers (so the machine's speed cannot make them pass or fail the other way). Loads no
// node: module: the adapters' scenario, served by Bun and Deno too, may use it.

/** `timeout` and `deadline` of apiKeyAuth() or createClient() for a test that does not test them. */
export const GENEROUS = Object.freeze({ timeout: 30_000, deadline: 60_000 });
