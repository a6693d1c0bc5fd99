// `fleet`: the command tree. The generated commands come from the operation manifest
// (cli/operations.json, compiled from the service's OpenAPI document; `fleet api sync` swaps
// in the one a server serves now); the hand-written workflows are declared here and their code
// is imported only when one runs. Only the group named on the command line gets its commands
// built, so `fleet --help` reads the manifest and builds ~30 group entries, nothing more.
import { Command, CommanderError, Option } from "commander";
import { CliError, EXIT, errorLines } from "./errors.js";
import { FORMATS } from "./formats.js";
import { loadManifest } from "./load-manifest.js";
import { addOperationCommand, COVERED_BY_WORKFLOWS, WORKFLOW_NAMES } from "./generated.js";
import type { Manifest } from "./manifest.js";
import type { Globals } from "./runtime.js";

export interface Io {
  stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  stderr: NodeJS.WritableStream;
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  env: NodeJS.ProcessEnv;
}

/** Global options that take a value: their value is not the command's name. */
const VALUED_GLOBALS = new Set(["-o", "--output", "--context", "--org"]);

/** The first word of the command line that is not an option or a global option's value: the command. */
function firstWord(argv: string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    if (VALUED_GLOBALS.has(argv[i])) i++;
    else if (!argv[i].startsWith("-")) return argv[i];
  }
  return undefined;
}

const collect = (value: string, previous: string[] = []) => [...previous, ...value.split(",").filter(Boolean)];

/** Runs `fleet` with `argv` (without node and the script); answers the exit code. */
export async function main(argv: string[], io: Io = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env }): Promise<number> {
  const manifest = loadManifest(io.env);
  const program = buildProgram(manifest, io, argv);
  try {
    await program.parseAsync(argv, { from: "user" });
    return typeof process.exitCode === "number" ? process.exitCode : EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === "commander.helpDisplayed" || err.code === "commander.version" || err.code === "commander.help") return EXIT.ok;
      return EXIT.usage;
    }
    if (err instanceof CliError) {
      io.stderr.write(errorLines(err).join("\n") + "\n");
      return err.exitCode;
    }
    io.stderr.write(`error: ${(err as Error).message}\n`);
    return EXIT.error;
  }
}

/**
 * The program; `argv` says which group's commands to build (all of them for completion and
 * for the test that every operation is a command: pass null).
 */
export function buildProgram(manifest: Manifest, io: Io, argv: string[] | null): Command {
  const program = new Command("fleet")
    .description("The fleet management service from the command line. Every API operation is a command (fleet GROUP COMMAND); workflows: login, context, deploy, rollout, logs, get, ssh, exec, port-forward, cp, devices label/unlabel/delete/preauthorize/config, completion.")
    .version(manifest.version === "unknown" ? "0.1.0" : manifest.version, "-V, --version")
    .addOption(new Option("-o, --output <format>", "table | wide | json | yaml | name (default: table on a terminal, json otherwise)").choices(FORMATS))
    .option("--context <name>", "the context to use (default: the current one; FLEET_URL/FLEET_API_KEY override)")
    .option("--org <organization>", "act in this organization (slug, name or id)")
    .showSuggestionAfterError(true)
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) });
  program.addHelpText("after", "\nExit codes: 0 ok, 1 other error, 2 usage or input refused (400), 3 authentication (401), 4 permission (403),\n5 not found (404), 6 conflict (409), 7 server or network (5xx, 429), 8 rollout paused, failed or aborted.\nDocumentation: docs/cli.md");

  const globals = (cmd: Command): Globals => cmd.optsWithGlobals() as Globals;
  const run = (loader: () => Promise<(args: unknown[], g: Globals, io: Io, cmd: Command) => Promise<number | void>>) =>
    async (...params: unknown[]) => {
      const cmd = params[params.length - 1] as Command;
      const handler = await loader();
      const code = await handler(params.slice(0, -1), globals(cmd), io, cmd);
      if (typeof code === "number" && code !== 0) process.exitCode = code;
    };

  // ---- sign-in and contexts
  program.command("login")
    .summary("sign in to a server and save the context")
    .description("Sign in to URL with an e-mail and password (asked for on a terminal; FLEET_PASSWORD or --password-stdin otherwise), an API key, or in the browser with the service's OpenID Connect provider (--web; the default when no e-mail or password is given, a browser can be opened and the server offers it), and save it as a context (mode 0600).")
    .argument("<url>", "the service's address, e.g. https://fleet.example.com")
    .option("--email <email>", "the account's e-mail address")
    .option("--password-stdin", "read the password from stdin")
    .option("--api-key <key>", "sign in with an API key instead (or FLEET_API_KEY)")
    .option("--web", "sign in in the browser (the service's OpenID Connect provider, PKCE on a loopback callback)")
    .option("--no-browser", "with --web: only print the address to open (on a machine without a browser)")
    .option("--name <context>", "the context's name (default: host/organization)")
    .action(run(async () => (await import("./commands/auth.js")).login));
  program.command("logout")
    .summary("end the session (revoked at the server) and forget the credential")
    .option("--all", "every context")
    .action(run(async () => (await import("./commands/auth.js")).logout));
  const context = program.command("context").summary("list, show and switch contexts (servers and organizations)");
  context.command("list").summary("the saved contexts").action(run(async () => (await import("./commands/auth.js")).contextList));
  context.command("current").summary("the context in use, and who it acts as").action(run(async () => (await import("./commands/auth.js")).contextCurrent));
  context.command("use").summary("make NAME the current context").argument("<name>").action(run(async () => (await import("./commands/auth.js")).contextUse));
  context.command("delete").summary("forget a context (without signing out)").argument("<name>").action(run(async () => (await import("./commands/auth.js")).contextDelete));

  // ---- workflows
  program.command("deploy")
    .summary("deploy an application version to the devices a selector matches")
    .description("Create a deployment of APP (its key or id) at VERSION (default: the latest) on the devices --selector matches, and start it. Staged with --canary/--batches. With --wait, follow it: exit 0 when it completed, 8 when it paused, failed or was aborted.")
    .argument("<app>", "APP[@VERSION]")
    .option("-l, --selector <key=value...>", "label selector (repeatable, or comma-separated)", collect)
    .option("--device <id>", "an explicit device (repeatable) instead of a selector", collect)
    .option("--profile <id>", "deployment profile (default: the version's first)")
    .option("--set <key=value>", "a parameter value (repeatable)", collect)
    .option("--name <name>", "the deployment's name (default: APP-VERSION-time)")
    .option("--canary <n|n%>", "staged: the canary batch, a count or a percent")
    .option("--batches <list>", "staged: the batches after the canary, e.g. 25%,50%,100%")
    .option("--success-threshold <percent>", "staged: percent of a batch that must run")
    .option("--failure-threshold <percent>", "staged: percent of a batch failing that pauses the rollout")
    .option("--auto-advance", "staged: start the next batch without approval")
    .option("--wait", "follow the rollout until it ends; exit 8 unless it completed")
    .option("--timeout <duration>", "with --wait: give up after this long (e.g. 30m)", "30m")
    .action(run(async () => (await import("./commands/deploy.js")).deploy));
  const rollout = program.command("rollout").summary("watch a staged rollout, and promote, approve, pause, resume or abort it");
  rollout.command("watch").summary("the rollout live: batches, counts, thresholds")
    .argument("<deployment>", "deployment id or name")
    .option("--interval <seconds>", "also poll every this many seconds", "5")
    .action(run(async () => (await import("./commands/deploy.js")).watch));
  rollout.command("status").summary("the rollout's state once").argument("<deployment>", "deployment id or name")
    .action(run(async () => (await import("./commands/deploy.js")).status));
  for (const move of ["promote", "approve", "pause", "resume", "abort", "retry-failed"] as const) {
    rollout.command(move).summary(`${move} the rollout`).argument("<deployment>", "deployment id or name")
      .action(run(async () => (await import("./commands/deploy.js")).move(move)));
  }
  // device actions (docs/actions.md)
  const actionOptions = (c: Command) => c
    .option("--reason <text>", "why (shown with the action and audited)")
    .option("--expires <duration>", "the device runs it only within this time (default 1h)")
    .option("--timeout <duration>", "with --wait: give up after this long", "15m");
  actionOptions(program.command("reboot").summary("reboot a device (asks on a terminal; --yes otherwise)").argument("<device>", "device id or name")
    .option("-y, --yes", "do not ask").option("--wait", "follow it until the device is back (exit 1 unless it succeeded)"))
    .action(run(async () => (await import("./commands/actions.js")).reboot));
  for (const [verb, kind] of [["restart", "restart-app"], ["stop", "stop-app"], ["start", "start-app"]] as const) {
    actionOptions(program.command(verb).summary(`${verb} one application on a device`).argument("<device>", "device id or name").argument("<app>", "the deployment (id or name) whose application it is")
      .option("--wait", "follow it until it ended (exit 1 unless it succeeded)"))
      .action(run(async () => (await import("./commands/actions.js")).onApplication(kind)));
  }
  actionOptions(program.command("diagnostics").summary("collect a device's diagnostics bundle and download it").argument("<device>", "device id or name")
    .requiredOption("-f, --file <file.tgz>", "where the bundle goes"))
    .action(run(async () => (await import("./commands/actions.js")).diagnostics));
  // jobs: one action over the devices of a selector (the rest of `fleet jobs` is generated)
  const jobs = program.command("jobs").summary("device actions over many devices, in batches: create (and the generated list, get, pause, resume, cancel, preview)");
  actionOptions(jobs.command("create").summary("run an action over the devices of a label selector, a canary first, then in batches")
    .argument("<kind>", "reboot, restart-app, stop-app, start-app, restart-agent, check-health, renew-certificate or diagnostics")
    .requiredOption("-l, --selector <key=value>", "label selector (repeatable, or comma-separated)", collect)
    .option("--app <deployment>", "the *-app kinds: the deployment (id or name) whose application it acts on")
    .option("--canary <n|p%>", "the canary: a count or a percent (default 1)")
    .option("--batches <n|p%,...>", "the batches after the canary; the last takes the rest", collect)
    .option("--failure-threshold <percent>", "failed or expired devices of a batch that pause the job (default 20)")
    .option("--success-threshold <percent>", "succeeded devices of a batch before the next (default 90)")
    .option("-y, --yes", "do not ask (disruptive kinds)")
    .option("--wait", "follow the job: exit 0 when it completed, 8 when it paused, expired or was cancelled"))
    .action(run(async () => (await import("./commands/jobs.js")).create));
  program.command("logs")
    .summary("a device's log lines; -f follows them")
    .argument("<device>", "device id or name")
    .option("-f, --follow", "follow new lines (Server-Sent Events)")
    .option("--level <level>", "debug | info | warn | error | fatal (repeatable)", collect)
    .option("--source <source>", "only this source")
    .option("--since <duration>", "lines newer than this, e.g. 10m, 2h, 1d")
    .option("--tail <n>", "with -f: this many lines before following", "100")
    .action(run(async () => (await import("./commands/logs.js")).logs));
  // ---- remote access (docs/remote-access.md): a session each, opened through the service
  program.command("ssh")
    .summary("an interactive shell on a device (~. at the start of a line leaves)")
    .description("Open a shell under a pty on DEVICE (its name or id) through the service: the local terminal in raw mode, its size sent at start and on every change, ~. after a newline leaves (~~ sends one ~). Exits with the shell's exit code; 255 when the session ended without one (the reason is printed).")
    .argument("<device>", "device name or id")
    .option("--reason <text>", "why (recorded with the session; required when the organization says so)")
    .action(run(async () => (await import("./commands/remote.js")).ssh));
  program.command("exec")
    .summary("run one command on a device: its stdout, stderr and exit code")
    .description("Run ARGV (a program and its arguments, no shell) on DEVICE: stdout and stderr apart, stdin forwarded, and exit with the command's own exit code; 255 when the session ended without one (the reason is printed).")
    .argument("<device>", "device name or id")
    .argument("<argv...>", "the command after --, e.g. fleet exec gw-01 -- uname -a")
    .option("--timeout <seconds>", "the device stops the command after this many seconds")
    .option("-t, --tty", "run it under a pty (the local terminal in raw mode)")
    .option("--reason <text>", "why (recorded with the session)")
    .action(run(async () => (await import("./commands/remote.js")).exec));
  program.command("port-forward")
    .summary("forward a local TCP port to a port on (or near) a device")
    .description("Listen on 127.0.0.1:LOCAL and carry each connection to REMOTE on the device's loopback, or to HOST:REMOTE on its network when the device allows it; each connection is a stream of its own, as many at once as come. LOCAL 0 picks a free port (printed). Ctrl-C stops.")
    .argument("<device>", "device name or id")
    .argument("<forward>", "LOCAL:REMOTE or LOCAL:HOST:REMOTE, e.g. 8080:80 or 8080:10.0.0.5:80")
    .option("--reason <text>", "why (recorded with the session)")
    .action(run(async () => (await import("./commands/port-forward.js")).portForward));
  program.command("cp")
    .summary("copy a file from or to a device, its size, mode and SHA-256 checked")
    .description("fleet cp DEVICE:/path LOCAL downloads (into a temporary file renamed over LOCAL only when size, mode and SHA-256 match); fleet cp LOCAL DEVICE:/dir/ uploads (a path ending in / takes the file's name). The device's configuration decides which roots may be read or written.")
    .argument("<source>", "DEVICE:/path or a local file")
    .argument("<destination>", "a local path, or DEVICE:/path")
    .option("--reason <text>", "why (recorded with the session)")
    .action(run(async () => (await import("./commands/cp.js")).cp));
  program.command("get")
    .summary("list a group's resources (fleet get devices --watch redraws on changes)")
    .argument("<group>", "a command group with a list command, e.g. devices, deployments")
    .option("-w, --watch", "redraw whenever the list changes (realtime events, and a poll)")
    .option("-l, --selector <key=value...>", "devices: label selector", collect)
    .option("--all", "every page")
    .option("--limit <n>", "page size")
    .option("--offset <n>", "page start")
    .allowUnknownOption(false)
    .action(run(async () => (await import("./commands/get.js")).get));
  for (const [verb, summary] of [["diff", "plan configuration documents against the organization: what apply would change (nothing is written)"], ["apply", "apply configuration documents in one transaction: all of them or nothing"]] as const) {
    program.command(verb)
      .summary(summary)
      .description(`${summary}. PATH is a YAML file or a directory (every *.yaml and *.yml below it); see docs/config-as-code.md. Exit 2 when a document is refused.`)
      .requiredOption("-f, --filename <path>", "a YAML file or a directory of them")
      .option("--prune", "delete the resources these documents' owner manages that they no longer declare")
      .option("--adopt", "take over resources of the same name that are not managed as code yet")
      .option("--commit <sha>", "the commit the documents come from (recorded in the owner mark)")
      .option("--prune-limit <n>", "the prune guard: a prune deleting more resources than this deletes none (default 10)")
      .option("--prune-percent <p>", "the prune guard's share: a prune deleting more than this percent of what these applies manage deletes none")
      .option("--no-prune-guard", "lift the prune guard: delete whatever the prune finds")
      .action(run(async () => (await import("./commands/config.js"))[verb]));
  }
  program.commands.find((c) => c.name() === "apply")!
    .option("-y, --yes", "with --prune: do not ask before deleting (needed when stdin is not a terminal)");
  program.command("completion")
    .summary("shell completion: source <(fleet completion bash)")
    .addArgument(new Command().createArgument("<shell>", "bash | zsh | fish").choices(["bash", "zsh", "fish"]))
    .action(run(async () => (await import("./completion.js")).completionScript));
  program.command("__complete", { hidden: true }).argument("[words...]").allowUnknownOption(true).helpOption(false)
    .action(run(async () => (await import("./completion.js")).complete));
  const api = program.command("api").summary("the operation manifest the commands are generated from");
  api.command("sync").summary("fetch the server's OpenAPI document and use its operations from now on for this context")
    .action(run(async () => (await import("./commands/api.js")).sync));
  api.command("operations").summary("every operation and its command")
    .action(run(async () => (await import("./commands/api.js")).operations));
  program.command("mcp")
    .summary("the service's MCP tools on stdio, for an assistant (Model Context Protocol)")
    .option("--read-only", "offer only the read-only tools")
    .action(run(async () => (await import("./commands/mcp.js")).mcp));

  // ---- the generated commands, one group per API module
  const requested = argv ? firstWord(argv) : undefined;
  const groups = new Map<string, Manifest["operations"]>();
  for (const op of manifest.operations) groups.set(op.group, [...(groups.get(op.group) ?? []), op]);
  for (const [module, operations] of [...groups].sort(([a], [b]) => a.localeCompare(b))) {
    const name = WORKFLOW_NAMES[module] ?? module;
    const group = program.commands.find((c) => c.name() === name) ?? program.command(name);
    if (!group.summary()) group.summary(operations.length === 1 ? operations[0].summary : `${operations.length} operations (${[...new Set(operations.map((o) => o.command))].slice(0, 4).join(", ")}${operations.length > 4 ? ", ..." : ""})`);
    group.helpGroup("API operations (generated):");
    if (argv !== null && requested !== name && requested !== "get" && requested !== "__complete") continue;
    for (const op of operations) {
      if (COVERED_BY_WORKFLOWS[op.id]) continue;
      addOperationCommand(group, op, io, run);
    }
  }
  if (argv === null || requested === "config" || requested === "__complete") {
    const config = program.commands.find((c) => c.name() === "config") ?? program.command("config").summary("configuration as code");
    config.command("export").summary("the organization's resources as documents: one YAML stream, or -d DIR one file per document (ready for fleet diff -f DIR)")
      .description("The resources of the organization --org names (slug, name or id; default: the context's) as configuration documents (GET /organizations/{orgId}/config/export). Without -d the YAML stream on stdout (-o json|yaml: the service's answer); with -d DIR one file per document, DIR/<kind>/<name>.yaml, in a new or empty folder.")
      .option("-d, --dir <folder>", "write one file per document into this new or empty folder")
      .action(run(async () => (await import("./commands/config.js")).exportDocuments));
  }
  if (argv === null || requested === "devices" || requested === "__complete") {
    const devices = program.commands.find((c) => c.name() === "devices") ?? program.command("devices").summary("devices");
    devices.command("label").summary("set labels on every device a selector matches (one bulk operation)")
      .argument("<key=value...>", "labels to set")
      .requiredOption("-l, --selector <key=value>", "label selector (repeatable, or comma-separated)", collect)
      .action(run(async () => (await import("./commands/devices.js")).label));
    devices.command("unlabel").summary("remove label keys from every device a selector matches")
      .argument("<key...>", "label keys to remove")
      .requiredOption("-l, --selector <key=value>", "label selector", collect)
      .action(run(async () => (await import("./commands/devices.js")).unlabel));
    devices.command("delete").summary("delete a device, or every device a selector matches (the count shown first; confirm on a terminal, --yes otherwise)")
      .argument("[id]", "a device id (without --selector)")
      .option("-l, --selector <key=value>", "label selector", collect)
      .option("-y, --yes", "do not ask")
      .action(run(async () => (await import("./commands/devices.js")).remove));
    devices.command("preauthorize").summary("import the factory's list of pre-authorized devices (CSV or JSON); listed ids are added or replaced")
      .description("POST /preauthorized-devices/import with the file: CSV with a header row (deviceId, keyFingerprint, publicKey, ekHash, labels) or JSON ([{ deviceId, ... }]). A device enrolling with a listed id is admitted with the entry's labels; a bad entry is named and nothing is imported.")
      .requiredOption("-f, --file <list.csv|list.json>", "the list (- for stdin)")
      .action(run(async () => (await import("./commands/devices.js")).preauthorize));
    devices.command("config").summary("a device's effective configuration: each variable and file with the layer and revision it came from")
      .description("GET /config-layers/effective for the device (id or name): whether the device applied it, drifted files, the layers that apply, and each value with its layer@revision and the layers it overrode. Secrets are named, never shown. -o json|yaml prints the whole answer (docs/configuration.md).")
      .argument("<device>", "device id or name")
      .action(run(async () => (await import("./commands/devices.js")).config));
  }
  return program;
}
