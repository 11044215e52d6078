// The request chokepoint's suite (request.test.ts) again, with its clients sending through the
// `fetch` option's transport instead of undici's pool: every guarantee must hold on both.

import { afterAll, expect } from "vitest";
import { useFetchTransport } from "./helpers/fault-server";

let calls = 0;
useFetchTransport((input, init) => {
  calls++;
  return fetch(input, init);
});
await import("./request.test");

afterAll(() => {
  // The suite really went through fetch (most of its clients come from testClient).
  expect(calls).toBeGreaterThan(20);
});
