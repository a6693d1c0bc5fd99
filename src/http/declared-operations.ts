// What the procedures declare in their meta (lossy text fields, ingest admission), found for a
// request before any adapter has routed it: by REST operation (method and path template under
// /api/v1) and by tRPC procedure path (each call of a batch). Shared by the request boundary
// (storable-input.ts) and the ingest admission (ingest-admission.ts).
import type { Request } from "express";
import type { Meta } from "../trpc/init.js";

const REST_PREFIX = "/api/v1";

const parameterName = (segment: string) => /^\{(.+)\}$/.exec(segment)?.[1];

/** One declaration the request carries: `call` is its index in a tRPC batch, null otherwise. */
export interface Declared<T> {
  call: number | null;
  value: T;
}

export class DeclaredOperations<T> {
  private readonly rest: { method: string; segments: string[]; value: T }[] = [];
  private readonly trpc = new Map<string, T>();

  /** `pick` reads a procedure's declaration from its meta (undefined: it declares none). */
  constructor(procedures: [string, Meta][], pick: (meta: Meta) => T | undefined) {
    for (const [path, meta] of procedures) {
      const value = pick(meta);
      if (value === undefined) continue;
      this.trpc.set(path, value);
      if (meta.openapi) this.rest.push({ method: meta.openapi.method, segments: meta.openapi.path.split("/").slice(1), value });
    }
  }

  /** The declarations of the procedures this request calls (on /api/v1 or /trpc). */
  of(req: Request): Declared<T>[] {
    const url = new URL(req.originalUrl, "http://localhost");
    if (req.baseUrl !== "/trpc") {
      const segments = url.pathname.slice(REST_PREFIX.length).split("/").slice(1);
      return this.rest
        .filter(({ method, segments: template }) =>
          method === req.method && template.length === segments.length && template.every((part, i) => parameterName(part) !== undefined || part === segments[i]))
        .map(({ value }) => ({ call: null, value }));
    }
    const procedures = url.pathname.replace(/^\/trpc\/?/, "").split(",");
    const batch = url.searchParams.get("batch") === "1";
    return (batch ? procedures : procedures.slice(0, 1)).flatMap((procedure, index) => {
      const value = this.trpc.get(procedure);
      return value === undefined ? [] : [{ call: batch ? index : null, value }];
    });
  }
}
