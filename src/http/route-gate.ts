// Routers entered only by requests that can match one of their routes. Express walks every
// router mounted under /api/v1 for every request that gets that far (the docs page's, then
// the twelve plain routers before the REST facade, src/app.ts): each entry re-parses the URL
// and tests the router's layers, which cost the facade's operations more than a tenth of
// their CPU (docs/benchmarks.md, "Management reads"). The gate reads the routers' own
// paths at start-up: a request whose first path segment no route of theirs begins with goes
// straight on, exactly where the routers would have sent it after testing every layer.
// A router with any layer whose first segment is not a plain word (a parameter, a wildcard,
// a middleware on "/") is always entered.
import express, { type NextFunction, type Request, type RequestHandler, type Response, type Router } from "express";

interface Layer {
  rawPath?: unknown;
}

/** The lowercase first segments of the router's layers' paths; null when one of them may match anything. */
function firstSegmentsOf(router: Router): Set<string> | null {
  const segments = new Set<string>();
  for (const layer of (router as unknown as { stack: Layer[] }).stack) {
    const paths = Array.isArray(layer.rawPath) ? layer.rawPath : [layer.rawPath];
    for (const path of paths) {
      const first = typeof path === "string" ? /^\/([A-Za-z0-9._~-]+)(\/|$)/.exec(path)?.[1] : undefined;
      if (first === undefined) return null;
      segments.add(first.toLowerCase());
    }
  }
  return segments;
}

/** The routers, in order, behind one gate on their paths' first segments (express matches paths case-insensitively). */
export function gatedRouters(...routers: Router[]): RequestHandler {
  const all = express.Router();
  for (const router of routers) all.use(router);
  const sets = routers.map(firstSegmentsOf);
  if (sets.some((set) => set === null)) return all;
  const segments = new Set(sets.flatMap((set) => [...set!]));
  return (req: Request, res: Response, next: NextFunction) => {
    const path = req.path;
    const end = path.indexOf("/", 1);
    return segments.has((end < 0 ? path.slice(1) : path.slice(1, end)).toLowerCase()) ? all(req, res, next) : next();
  };
}
