// `npm run samples [-- --port 3999] [--url http://localhost:3000 --key fm_...]`: the offline way to
// something deployable. Serves the project's sample applications (the ones `npm run demo`
// uses, scripts/sample-apps.ts) as a Git repository over smart HTTP on 127.0.0.1 and prints
// the URL to add as a Git registry (console: Registries -> Add Git registry, branch main, path
// /apps). With --key (an API key with registries:write) it adds the registry to the key's
// organization of the service at --url (default http://localhost:$PORT, as the service reads PORT)
// and syncs it. Serves until Ctrl-C; the service's
// scheduled syncs need it running (the same --port gives the same URL next time).
import { parseArgs } from "node:util";
import { onStopSignals } from "../src/lib/stop-signals.js";
import { addSampleRegistry, apiCaller, serveSampleApps, syncSummary } from "./sample-apps.js";

const USAGE = "usage: npm run samples -- [--port 3999] [--url http://localhost:3000 --key fm_...]\n" +
  "  --url: the service's address; without it http://localhost:$PORT, the port the service takes from PORT too (default 3000)";

function options() {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: { port: { type: "string", default: "3999" }, url: { type: "string" }, key: { type: "string" }, help: { type: "boolean", short: "h", default: false } },
    strict: true,
  });
  if (values.help) return null;
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new Error("--port: a port number (0: any free one)");
  if (values.url && !/^https?:\/\/[^/]+\/?$/.test(values.url)) throw new Error("--url: the service's address, e.g. http://localhost:3000");
  // Without --url, the service of this machine on the port it listens on: PORT, as `npm start` reads it.
  const servicePort = process.env.PORT?.trim() || "3000";
  if (!values.url && !/^\d{1,5}$/.test(servicePort)) throw new Error(`PORT: "${process.env.PORT}" is not a port number (or give --url)`);
  const url = (values.url ?? `http://localhost:${servicePort}`).replace(/\/$/, "");
  const urlFrom = values.url ? "--url" : process.env.PORT?.trim() ? `PORT=${servicePort}` : "the default port 3000";
  return { port, url, urlFrom, key: values.key };
}

let opts: NonNullable<ReturnType<typeof options>>;
try {
  const given = options();
  if (!given) {
    console.log(USAGE);
    process.exit(0);
  }
  opts = given;
} catch (err) {
  console.error((err as Error).message);
  console.error(USAGE);
  process.exit(2);
}

/** Why adding the registry failed, and for a service that does not answer, what was tried and what to do. */
function addFailure(err: Error): string {
  const cause = (err as Error & { cause?: { code?: string } }).cause?.code;
  if (cause === "ECONNREFUSED" || cause === "ENOTFOUND" || cause === "EHOSTUNREACH" || cause === "ECONNRESET") {
    return `nothing answers there (${cause}; the address from ${opts.urlFrom}). Is the service running? Give its address with --url http://host:port, or its port with PORT=<port>`;
  }
  return err.message;
}

const say = (line: string) => process.stdout.write(line + "\n");
const samples = await serveSampleApps({ port: opts.port }).catch((err: Error) => {
  console.error(`npm run samples: ${err.message}${/EADDRINUSE/.test(err.message) ? ` (port ${opts.port} is taken: --port another)` : ""}`);
  process.exit(1);
});
onStopSignals(() => {
  void samples.close().finally(() => {
    say("stopped");
    process.exit(0);
  });
}, () => process.exit(1));

say(`serving the sample applications (4 applications, 5 manifests) as a Git repository at ${samples.url}`);
say(`  add it as a Git registry: URL ${samples.url}, branch main, path /apps (console: Registries -> Add Git registry)`);
if (opts.key) {
  try {
    const { registry, synced } = await addSampleRegistry(apiCaller(opts.url), opts.key, samples.url);
    say(`  added to ${opts.url} as Git registry '${registry.name}' (id ${registry.id}) and ${syncSummary(synced)}`);
  } catch (err) {
    say(`  could not add it to ${opts.url}: ${addFailure(err as Error)}`);
  }
} else {
  say(`  or let this command add it: npm run samples -- --url ${opts.url} --key fm_...   (a key with registries:write)`);
}
say("Ctrl-C stops serving (the registry's scheduled syncs then fail until it serves again on the same port)");
