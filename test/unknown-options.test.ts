// Near misses of unknown option names: a suggestion only when it is likely the name meant.
import { describe, expect, it } from "vitest";
import { findUnknownOptions, nearestName, unknownOptionsMessage } from "../src/unknown-options";

const REDIS = ["client", "url", "prefix", "max", "timeout", "lease", "logger"];
const MIDDLEWARE = ["rootKey", "optional", "realm", "cache", "cache.ttl", "cache.negativeTtl", "cache.max", "retry.attempts"];

describe("nearestName", () => {
  it("short names: one edit at most, so ttl is not taken for url, nor tll for url", () => {
    expect(nearestName("ttl", REDIS)).toBeUndefined();
    expect(nearestName("uri", REDIS)).toBe("url");
    expect(nearestName("mx", REDIS)).toBe("max");
    expect(nearestName("maxx", REDIS)).toBe("max");
    expect(nearestName("lese", REDIS)).toBe("lease");
    expect(nearestName("min", REDIS)).toBeUndefined();
    expect(nearestName("ul", ["url", "ttl"])).toBe("url");
  });

  it("names of 5 or more characters on both sides: up to two edits", () => {
    expect(nearestName("timout", REDIS)).toBe("timeout");
    expect(nearestName("tiemout", REDIS)).toBe("timeout");
    expect(nearestName("prefx", REDIS)).toBe("prefix");
    expect(nearestName("optinal", MIDDLEWARE)).toBe("optional");
    expect(nearestName("raelm", MIDDLEWARE)).toBe("realm");
    // Three edits, or two on a 4-letter side: nothing.
    expect(nearestName("timeuot2", REDIS)).toBeUndefined();
    expect(nearestName("lgr", REDIS)).toBeUndefined();
    expect(nearestName("leas", ["lease"])).toBe("lease");
    expect(nearestName("lea", ["lease"])).toBeUndefined();
  });

  it("the same letters in another case, whatever the length", () => {
    expect(nearestName("URL", REDIS)).toBe("url");
    expect(nearestName("rootkey", MIDDLEWARE)).toBe("rootKey");
    expect(nearestName("Cache.TTL", MIDDLEWARE)).toBe("cache.ttl");
  });

  it("the closest name, not the first one within reach", () => {
    expect(nearestName("leasesx", ["lease", "leases"])).toBe("leases");
    expect(nearestName("timeouts", ["timeoutMs", "timeout"])).toBe("timeoutMs"); // a tie: the first
  });

  it("a nested name is compared with the names inside the same option, by its last part", () => {
    expect(nearestName("cache.ttll", MIDDLEWARE)).toBe("cache.ttl");
    expect(nearestName("cache.tll", MIDDLEWARE)).toBe("cache.ttl");
    expect(nearestName("retry.attemps", MIDDLEWARE)).toBe("retry.attempts");
    expect(nearestName("cache.url", MIDDLEWARE)).toBeUndefined();
    // Not a name of another option, nor a top-level one.
    expect(nearestName("retry.max", MIDDLEWARE)).toBeUndefined();
    expect(nearestName("ttl", MIDDLEWARE)).toBeUndefined();
  });
});

describe("findUnknownOptions and its message", () => {
  it("suggests only near misses, and the message names names only", () => {
    const found = findUnknownOptions(["url", "ttl", "timout", "URL"], REDIS);
    expect(found).toEqual({ names: ["ttl", "timout", "URL"], didYouMean: { timout: "timeout", URL: "url" } });
    expect(unknownOptionsMessage(found!, REDIS)).toBe(
      "unknown options ttl, timout (did you mean timeout?), URL (did you mean url?); the options are client, url, prefix, max, timeout, lease, logger.",
    );
    expect(findUnknownOptions(["url", "max"], REDIS)).toBeUndefined();
  });
});
