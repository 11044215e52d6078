// Which errors of PostgreSQL and Redis count as an outage (StoreUnavailableError, answered 503)
// and which stay what they are (a bug: 500).
import { describe, expect, it } from "vitest";
import { StoreUnavailableError } from "../../../src/server/errors";
import { describeServer, storeError } from "../../../src/server/storage/store-errors";

const dbError = (code: string, message = "x") => Object.assign(new Error(message), { code, severity: "ERROR" });
const replyError = (message: string) => Object.assign(new Error(message), { name: "ReplyError" });

describe("storeError", () => {
  it.each([
    ["connection refused", Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" }), "connection refused"],
    ["connection reset", Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" }), "connection lost"],
    ["pool connect timeout", new Error("timeout exceeded when trying to connect"), "timed out"],
    ["connection ended", new Error("Connection terminated unexpectedly"), "connection lost"],
    ["query timeout", new Error("Query read timeout"), "timed out"],
    ["admin shutdown", dbError("57P01", "terminating connection due to administrator command"), "server shutting down or starting up"],
    ["starting up", dbError("57P03", "the database system is starting up"), "server shutting down or starting up"],
    ["too many connections", dbError("53300", "sorry, too many clients already"), "server out of resources (connections, memory or disk)"],
    ["connection failure", dbError("08006", "connection failure"), "connection failure"],
    [
      "a rejected password",
      dbError("28P01", 'password authentication failed for user "kg"'),
      'password authentication failed for user "kg"',
    ],
    ["a missing database", dbError("3D000", 'database "kg" does not exist'), 'database "kg" does not exist'],
  ])("PostgreSQL %s is an outage", (_, err, reason) => {
    const out = storeError(err, "postgres", "db:5432");
    expect(out).toBeInstanceOf(StoreUnavailableError);
    expect((out as Error).message).toBe(`PostgreSQL at db:5432 is unavailable: ${reason}`);
    expect((out as Error).cause).toBe(err);
  });

  it.each([
    ["syntax error", dbError("42601")],
    ["unique violation", dbError("23505")],
    ["deadlock", dbError("40P01")],
    ["a plain bug", new TypeError("cannot read properties of undefined")],
  ])("PostgreSQL %s stays as it is", (_, err) => {
    expect(storeError(err, "postgres", "db:5432")).toBe(err);
  });

  it.each([
    ["offline", new Error("Stream isn't writeable and enableOfflineQueue options is false")],
    ["timeout", new Error("Command timed out")],
    ["loading", replyError("LOADING Redis is loading the dataset in memory")],
    ["out of memory", replyError("OOM command not allowed when used memory > 'maxmemory'.")],
    ["a rejected password", replyError("WRONGPASS invalid username-password pair or user is disabled.")],
    ["retries", Object.assign(new Error("Reached the max retries per request limit (which is 0)."), { name: "MaxRetriesPerRequestError" })],
  ])("Redis %s is an outage", (_, err) => {
    expect(storeError(err, "redis", "cache:6379")).toBeInstanceOf(StoreUnavailableError);
  });

  it("a Redis script error stays as it is", () => {
    const err = replyError("ERR user_script:1: Script attempted to access nonexistent global variable");
    expect(storeError(err, "redis", "cache:6379")).toBe(err);
  });

  it("describes a server by host and port only", () => {
    expect(describeServer(new URL("postgres://u:secret@db.internal/keyguard"), 5432)).toBe("db.internal:5432");
    expect(describeServer(new URL("redis://:secret@127.0.0.1:6380/2"), 6379)).toBe("127.0.0.1:6380");
  });
});
