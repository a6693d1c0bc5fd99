// The web console (web/, built by Vite into web/dist, see src/lib/console-build.ts) served at
// `/`: hashed assets cached for a year, index.html never cached, and the console's own paths
// (/devices/…, /groups, …) answered with index.html so that a shared link or a reload opens the
// right page. The API (/api, /trpc) and the probes never fall through to it: an unknown API path
// stays a JSON 404, and so does any non-HTML request outside the console.
import fs from "node:fs";
import path from "node:path";
import express, { type Request, type Response, type NextFunction } from "express";
import { CONSOLE_DIST } from "../lib/console-build.js";
import { requestIdOf } from "../trpc/context.js";
import { errorBody } from "../trpc/errors.js";

const NOT_CONSOLE = /^\/(api|trpc|healthz|readyz)(\/|$)/;

/**
 * `next` (where to go after signing in) as a path of this console, or null when it is not one:
 * another site (`https://…`, `//host`, `/\host`), the API, control characters. The sign-in page
 * itself becomes "/". The result is the normalized path with its query and fragment.
 */
export function consoleReturnPath(next: string | undefined): string | null {
  if (next === undefined || next === "") return "/";
  if (next.length > 2000 || !next.startsWith("/") || next.startsWith("//") || /[\\\u0000-\u001f\u007f]/.test(next)) return null;
  const base = "http://console.invalid";
  let url: URL;
  try {
    url = new URL(next, base);
  } catch {
    return null;
  }
  if (url.origin !== base || NOT_CONSOLE.test(url.pathname)) return null;
  if (url.pathname === "/sign-in" || url.pathname.startsWith("/sign-in/")) return "/";
  return url.pathname + url.search + url.hash;
}

function wantsPage(req: Request): boolean {
  if (req.method !== "GET" && req.method !== "HEAD") return false;
  if (NOT_CONSOLE.test(req.path)) return false;
  // A file name (favicon.ico, robots.txt, a missing asset) is not a console page.
  if (path.extname(req.path) !== "") return false;
  return req.path === "/" || req.accepts(["json", "html"]) === "html";
}

export function consoleRoutes(dist: string = CONSOLE_DIST): express.Router {
  const router = express.Router();
  router.use("/assets", express.static(path.join(dist, "assets"), { index: false, immutable: true, maxAge: "365d" }));
  router.use(express.static(dist, { index: false, maxAge: "1h" }));
  const indexFile = path.join(dist, "index.html");
  router.use((req: Request, res: Response, next: NextFunction) => {
    if (!wantsPage(req)) return next();
    if (!fs.existsSync(indexFile)) {
      // npm install and npm start build it; a checkout that skipped both says what to run.
      res.status(503).json(errorBody(requestIdOf(req), 503, "SERVICE_UNAVAILABLE", "The web console is not built: run `npm run build:web` (npm start does it by itself)"));
      return;
    }
    res.setHeader("Cache-Control", "no-cache");
    res.sendFile(indexFile);
  });
  return router;
}
