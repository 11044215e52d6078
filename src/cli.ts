#!/usr/bin/env node
// The `keyguard` command line: `keyguard serve` runs the local key service.

const args = process.argv.slice(2);
if (args.includes("--help") || args.includes("-h") || args.length === 0) {
  console.log("Usage: keyguard serve [--port 8787] [--host 127.0.0.1] [--root-key K] [--data FILE]");
  process.exit(0);
}
console.error("keyguard: the serve command is not built yet");
process.exit(1);
