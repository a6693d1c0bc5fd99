// Public surface of the package for TypeScript clients:
//   import type { AppRouter } from "fleet-manager";
export type { AppRouter } from "./trpc/router.js";
