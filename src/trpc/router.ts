// The root router. Its type is what TypeScript clients import (see src/index.ts).
import { router } from "./procedures.js";
import { authRouter } from "../modules/auth/router.js";
import { organizationsRouter } from "../modules/organizations/router.js";

export const appRouter = router({
  auth: authRouter,
  organizations: organizationsRouter,
});

export type AppRouter = typeof appRouter;
