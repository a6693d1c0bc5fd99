// `npm start`: the service's production build (dist/service/main.js, scripts/build-service.mjs),
// built first when it is missing or older than its sources, then run in this process (so stop
// signals reach the service itself). Workers of WORKERS > 1 run this file too: the primary has
// built by then.
import cluster from "node:cluster";
import { pathToFileURL } from "node:url";
import { ensureServiceBuild, SERVICE_ENTRY } from "./build-service.mjs";

if (cluster.isPrimary) await ensureServiceBuild((line) => console.error(line));
await import(pathToFileURL(SERVICE_ENTRY).href);
