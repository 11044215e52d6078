// Checks the subjects of the commits since the rule began (CONTRIBUTING.md, "Commits"): each is
// `area: what changed`, the area in lower case (`server`, `docs`, `tests`, `middleware/express`),
// at most 72 characters. Merge commits are not checked. Run by .ci/run; by hand:
//   node scripts/check-commits.mjs [<base>]      (default base 177712f: the commits after it)
// When the base is not in the history (a shallow clone, an archive without .git), it says so and
// passes: there is nothing it could check.
/* global process, console */
import { execFileSync } from "node:child_process";
import { dirname, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** The last commit before the rule: the commits after it are checked. */
const DEFAULT_BASE = "177712f";
const MAX_SUBJECT = 72;
/** `area: what changed`: a lower-case area (`a-z`, digits, `-`), maybe with `/sub-area`s, a colon, a space, then text. */
const SUBJECT = /^[a-z][a-z0-9-]*(?:\/[a-z0-9-]+)*: \S/;

/**
 * What is wrong with a subject, or an empty list.
 * @param {string} subject
 * @returns {string[]}
 */
export function subjectProblems(subject) {
  const problems = [];
  if (subject.length > MAX_SUBJECT) problems.push(`${subject.length} characters (at most ${MAX_SUBJECT})`);
  if (!SUBJECT.test(subject)) problems.push("not `area: what changed` with a lower-case area (e.g. `server: …`, `middleware/express: …`)");
  return problems;
}

/** @param {string[]} args */
function git(...args) {
  return execFileSync("git", args, { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

/** @param {string[]} args */
function succeeds(...args) {
  try {
    git(...args);
    return true;
  } catch {
    return false;
  }
}

function main() {
  const base = process.argv[2] ?? DEFAULT_BASE;
  if (!succeeds("rev-parse", "--git-dir")) {
    console.log("commit subjects: not checked: this is not a git checkout.");
    return 0;
  }
  if (!succeeds("cat-file", "-e", `${base}^{commit}`) || !succeeds("merge-base", "--is-ancestor", base, "HEAD")) {
    const shallow = git("rev-parse", "--is-shallow-repository").trim() === "true";
    console.log(
      `commit subjects: not checked: commit ${base} is not in this history${shallow ? " (a shallow clone: fetch with --unshallow, or a depth that reaches it)" : ""}.`,
    );
    return 0;
  }
  const log = git("log", "--no-merges", "--format=%h%x00%s", `${base}..HEAD`);
  const commits = log.split("\n").filter((line) => line !== "");
  const bad = commits.flatMap((line) => {
    const [hash, subject] = line.split("\0");
    const problems = subjectProblems(subject ?? "");
    return problems.length === 0 ? [] : [`${hash} ${JSON.stringify(subject)}: ${problems.join("; ")}`];
  });
  if (bad.length > 0) {
    console.error(`commit subjects: ${bad.length} of ${commits.length} commits after ${base} break the rule in CONTRIBUTING.md:`);
    for (const line of bad) console.error(`  ${line}`);
    console.error("Reword them (git rebase -i) before they are pushed.");
    return 1;
  }
  console.log(
    `commit subjects: ${commits.length} commits after ${base}, each \`area: what changed\` in at most ${MAX_SUBJECT} characters.`,
  );
  return 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  process.exitCode = main();
}
