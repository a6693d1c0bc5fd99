// The spec has actions whose request is "none" (set the default CA, enable or sync a Git
// registry, ...): clients send them without any body and without a content type. The REST
// facade would answer those 415, so a POST/PUT/PATCH with no body at all is handed on as an
// empty JSON object. A body in another format still gets its 415.
import type { NextFunction, Request, Response } from "express";

const BODY_METHODS = new Set(["POST", "PUT", "PATCH"]);

export function acceptEmptyBody(req: Request, _res: Response, next: NextFunction) {
  const hasBody = Number(req.headers["content-length"] ?? 0) > 0 || req.headers["transfer-encoding"] !== undefined;
  if (BODY_METHODS.has(req.method) && !hasBody && !req.headers["content-type"]) {
    req.headers["content-type"] = "application/json";
    req.body = {};
  }
  next();
}
