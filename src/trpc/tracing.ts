// The procedures' span (src/lib/tracing): the first middleware of every procedure builder
// (procedures.ts, device-auth.ts), a child of the request's span. A no-op when tracing is off.
import { t } from "./init.js";
import { inProcedureSpan } from "../lib/tracing/index.js";

export const traceProcedure = t.middleware(({ path, type, next }) => inProcedureSpan(path, type, next));
