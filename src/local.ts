// keyguard/local: the former name of keyguard/server, kept so that existing imports keep working.
// Re-exports only. New code imports keyguard/server.
export * from "./server";
