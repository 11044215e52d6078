// Where the key service's CPU goes, by the request pipeline's named steps: a V8 CPU profile taken in
// the service process (node:inspector, on demand) while a load runs, each sample attributed to the
// innermost frame that belongs to a step (by source file, and by function for the pipeline's own
// file src/server/http/app.ts); samples under no step are node:http and sockets, or the runtime
// (GC, microtasks). The profiler samples wall time: on a busy machine a write to the socket, which
// wakes the load generator, also counts the wait for a core, so it is shown apart. Sampling slows
// the process a little: the figures come from a run of their own, never the measured throughput.

import { readFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { SourceMap, type SourceMapPayload } from "node:module";
import { fileURLToPath } from "node:url";

export const STEPS = [
  "routing",
  "reading the body",
  "validation",
  "authentication",
  "the operation (store included)",
  "events",
  "metrics",
  "serialisation and sending",
  "the pipeline's own code",
  "node:http",
  "socket writes (kernel; on a busy machine also waits for a core)",
  "garbage collection",
  "runtime and other",
] as const;
export type Step = (typeof STEPS)[number];

/** Steps by source file (the path's end). */
const BY_FILE: ReadonlyArray<[RegExp, Step]> = [
  [/src\/server\/http\/route\.ts$/, "routing"],
  [/src\/server\/http\/request-body\.ts$/, "reading the body"],
  [/src\/server\/operations\/(validate|schemas)\.ts$|src\/protocol\/contract\/|typebox/, "validation"],
  [/src\/server\/operations\/auth\.ts$/, "authentication"],
  [/src\/server\/storage\/verification-events\.ts$/, "events"],
  [/src\/server\/(metrics|http\/metrics-route)\.ts$|prom-client/, "metrics"],
  [/src\/server\/(domain|storage|operations)\//, "the operation (store included)"],
  [/src\/server\/http\/(send|envelope)\.ts$/, "serialisation and sending"],
];

/** The pipeline's functions in app.ts, by step (the rest of app.ts is the pipeline's own code). */
const IN_APP: Readonly<Record<string, Step>> = {
  read: "reading the body",
  validateBody: "validation",
  run: "the operation (store included)",
  inStore: "the operation (store included)",
  authoriseByRoot: "the operation (store included)",
  authoriseInStore: "the operation (store included)",
  answerOf: "serialisation and sending",
  announce: "events",
};

const NODE_HTTP = /^node:(_http_|http|net|stream|internal\/streams|internal\/http|_stream)|^node:internal\/(stream_base_commons|net)/;

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber?: number; columnNumber?: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples?: number[];
  /** µs before each sample. */
  timeDeltas?: number[];
}

let session: Session | undefined;

/** Starts sampling this process (1 sample per 100 µs). */
export async function startProfile(): Promise<void> {
  session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 100 });
  await session.post("Profiler.start");
}

/** What a profile says: µs sampled per step (idle left out), the samples, and the frames most sampled under no step. */
export interface StepTimes {
  micros: Record<Step, number>;
  samples: number;
  /** The innermost frames of "runtime and other", most sampled first (up to 5), with their µs. */
  other: Array<{ frame: string; micros: number }>;
}

/** Stops sampling; the sampled time spent in each step. */
export async function stopProfile(): Promise<StepTimes> {
  if (!session) throw new Error("bench: stopProfile without startProfile");
  const { profile } = (await session.post("Profiler.stop")) as unknown as { profile: Profile };
  session.disconnect();
  session = undefined;
  return attribute(profile);
}

/** The source maps of the built bench's bundles, by URL (undefined: not one). */
const SOURCE_MAPS = new Map<string, SourceMap | undefined>();

/** The source file of a frame in a bundle of bench/.build/ (its source map), else `url` itself. */
function sourceOf(url: string, line: number, column: number): string {
  if (!url.startsWith("file://") || !url.endsWith(".mjs")) return url;
  if (!SOURCE_MAPS.has(url)) {
    let map: SourceMap | undefined;
    try {
      map = new SourceMap(JSON.parse(readFileSync(`${fileURLToPath(url)}.map`, "utf8")) as SourceMapPayload);
    } catch {
      map = undefined;
    }
    SOURCE_MAPS.set(url, map);
  }
  const entry = SOURCE_MAPS.get(url)?.findEntry(line, column);
  return entry && "originalSource" in entry ? entry.originalSource : url;
}

export function attribute(profile: Profile): StepTimes {
  const parent = new Map<number, number>();
  const byId = new Map<number, ProfileNode>();
  for (const n of profile.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  const stepOf = new Map<number, Step | null>();
  const classify = (id: number): Step | null => {
    if (stepOf.has(id)) return stepOf.get(id)!;
    const { functionName, url: where, lineNumber, columnNumber } = byId.get(id)!.callFrame;
    // The built bench (bench/.build/) names its bundles: the step is found by the source file.
    const url = sourceOf(where, lineNumber ?? 0, columnNumber ?? 0);
    let step: Step | null = null;
    if (functionName === "(idle)" || functionName === "(program)") step = null;
    else if (functionName === "writev" || functionName === "writeUtf8String" || functionName === "writeBuffer")
      step = "socket writes (kernel; on a busy machine also waits for a core)";
    else if (functionName === "(garbage collector)") step = "garbage collection";
    else if (url.endsWith("src/server/http/app.ts")) step = IN_APP[functionName] ?? "the pipeline's own code";
    else step = BY_FILE.find(([re]) => re.test(url))?.[1] ?? null;
    if (step === null) {
      const up = parent.get(id);
      const above = up === undefined ? null : classify(up);
      step = above ?? (NODE_HTTP.test(url) ? "node:http" : null);
    }
    stepOf.set(id, step);
    return step;
  };
  const micros = Object.fromEntries(STEPS.map((s) => [s, 0])) as Record<Step, number>;
  const other = new Map<string, number>();
  let samples = 0;
  const ids = profile.samples ?? [];
  for (let i = 0; i < ids.length; i++) {
    // A sample stands for the time since the one before it.
    const { functionName, url } = byId.get(ids[i]!)!.callFrame;
    // Idle, and the inspector's own call that stops the profiler (not the service's work).
    if (functionName === "(idle)" || (functionName === "dispatch" && url === "")) continue;
    const step = classify(ids[i]!) ?? "runtime and other";
    const dt = profile.timeDeltas?.[i] ?? 0;
    micros[step] += dt;
    if (step === "runtime and other") {
      const frame = `${functionName || "(anonymous)"}${url ? ` (${url.replace(/^.*\/node_modules\//, "")})` : ""}`;
      other.set(frame, (other.get(frame) ?? 0) + dt);
    }
    samples++;
  }
  const top = [...other].sort((a, b) => b[1] - a[1]).slice(0, 5);
  return { micros, samples, other: top.map(([frame, us]) => ({ frame, micros: us })) };
}
