// `npm start`: the service's production build (dist/service/main.js, scripts/build-service.mjs),
// built first when it is missing or older than its sources, then run in this process (so stop
// signals reach the service itself). Workers of WORKERS > 1 run this file too: the primary has
// built by then.
//
// package.json's start passes `--max-semi-space-size=8` to node: V8's young generation then
// grows to 2 x 8 MB instead of 2 x 16 MB under load, which keeps the embedded default with 100
// devices heartbeating under 300 MB resident at no CPU cost measured on the heartbeat benchmark
// (docs/benchmarks.md, "100 devices under 300 MB").
import cluster from "node:cluster";
import { pathToFileURL } from "node:url";
import { ensureServiceBuild, SERVICE_ENTRY } from "./build-service.mjs";

if (cluster.isPrimary) await ensureServiceBuild((line) => console.error(line));
await import(pathToFileURL(SERVICE_ENTRY).href);
