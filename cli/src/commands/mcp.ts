// fleet mcp: the service's MCP tools on stdio, for an assistant that starts its MCP servers as
// subprocesses. The bridge is cli/src/mcp/stdio-bridge.ts (runStdioBridge); this command hands
// it the context's server and credential and waits until stdin ends.
import type { Command } from "commander";
import { CliError, EXIT, exitCodeOfStatus } from "../errors.js";
import { connect, type Globals } from "../runtime.js";
import type { Io } from "../main.js";

interface Bridge {
  runStdioBridge(options: { url: string; apiKey?: string; token?: () => Promise<string>; readOnly?: boolean; clientName?: string }): Promise<{ tools: unknown[]; closed: Promise<void> }>;
}

export async function mcp(_args: unknown[], globals: Globals, io: Io, cmd: Command): Promise<number | void> {
  let bridge: Bridge;
  try {
    // the bundle holds the bridge as dist/mcp/stdio-bridge.js (cli/build.mjs); the sources as src/mcp/stdio-bridge.ts
    const bundled = !import.meta.url.includes("/src/");
    bridge = (await import(new URL(bundled ? "./mcp/stdio-bridge.js" : "../mcp/stdio-bridge.js", import.meta.url).href)) as Bridge;
  } catch (err) {
    if ((err as { code?: string }).code === "ERR_MODULE_NOT_FOUND" && String((err as Error).message).includes("stdio-bridge")) {
      throw new CliError(EXIT.error, "this build of fleet has no MCP bridge (cli/src/mcp/stdio-bridge.ts)");
    }
    throw err;
  }
  const { client } = await connect(globals, io);
  const { apiKey } = client.context;
  // a session's token is asked for before every request: the bridge may run for hours, its access token 15 minutes
  const token = apiKey ? undefined : async () => (await client.accessToken()) ?? "";
  let running: Awaited<ReturnType<Bridge["runStdioBridge"]>>;
  try {
    running = await bridge.runStdioBridge({ url: client.server, apiKey, token, readOnly: Boolean(cmd.opts().readOnly), clientName: "fleet-cli" });
  } catch (err) {
    // McpBridgeError: the service refused the credential at start (401, 403)
    const status = (err as { status?: unknown }).status;
    if (typeof status === "number") throw new CliError(exitCodeOfStatus(status), (err as Error).message, { status });
    throw err;
  }
  io.stderr.write(`fleet mcp: ${running.tools.length} tools of ${client.server} on stdio\n`);
  await running.closed;
}
