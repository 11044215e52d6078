// Loads an optional peer dependency of a storage backend on demand, with an error that says
// what to install when it is missing.
import { LocalServiceConfigError } from "./errors";

/**
 * `import(name)`, unwrapping a CommonJS default export. When the package is not installed:
 * `LocalServiceConfigError` naming the package and the option that needs it.
 */
export async function loadPeer<T>(name: string, neededBy: string, load: () => Promise<unknown>): Promise<T> {
  let mod: unknown;
  try {
    mod = await load();
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") {
      throw new LocalServiceConfigError(`keyguard/server: ${neededBy} needs the package "${name}". Install it with: npm install ${name}`);
    }
    throw err;
  }
  const withDefault = mod as { default?: unknown };
  return (withDefault.default ?? mod) as T;
}
