// The stdio bridge as a program of its own (`node --import tsx cli/src/mcp/stdio-bridge-main.ts`),
// configured from the environment the way `fleet` reads it in CI: FLEET_URL, FLEET_API_KEY (or
// FLEET_TOKEN), FLEET_MCP_READ_ONLY=1. `fleet mcp` runs the same runStdioBridge with its context.
// Exit codes: 0 when stdin ends, 2 without FLEET_URL or a credential, 3 when the service refuses
// the credential (401), 4 when it forbids (403), 1 otherwise. Messages go to stderr: stdout is MCP's.
import { McpBridgeError, runStdioBridge } from "./stdio-bridge.js";

const url = process.env.FLEET_URL;
const apiKey = process.env.FLEET_API_KEY || undefined;
const token = process.env.FLEET_TOKEN || undefined;

if (!url || (!apiKey && !token)) {
  process.stderr.write("fleet mcp: set FLEET_URL and FLEET_API_KEY (or FLEET_TOKEN)\n");
  process.exit(2);
}

try {
  const bridge = await runStdioBridge({ url, apiKey, token, readOnly: ["1", "true"].includes(process.env.FLEET_MCP_READ_ONLY ?? "") });
  process.stderr.write(`fleet mcp: ${bridge.tools.length} tools of ${url} on stdio\n`);
  await bridge.closed;
  process.exit(0);
} catch (err) {
  process.stderr.write(`fleet mcp: ${(err as Error).message}\n`);
  const status = err instanceof McpBridgeError ? err.status : undefined;
  process.exit(status === 401 ? 3 : status === 403 ? 4 : 1);
}
