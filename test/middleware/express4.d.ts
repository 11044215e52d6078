// Express 4 is installed as the npm alias `express4` (no bundled types): reuse the Express types.
declare module "express4" {
  export * from "express";
  export { default } from "express";
}
