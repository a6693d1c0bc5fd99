// The MCP server at /api/v1/mcp with its default setting (read-only tools), through the
// official MCP client over streamable HTTP and through the stdio bridge (cli/src/mcp) as a
// subprocess: the tools listed, a read tool answering what REST answers, mutating tools
// refused, a permission refusal and another tenant's device as the API answers them, and the
// API's 401 for a request without a valid credential.
import path from "node:path";
import { PassThrough } from "node:stream";
import { StdioServerTransport } from "@modelcontextprotocol/server/stdio";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import type { Tool } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Harness, Tenant } from "../../support/harness.js";
import { mcpTools } from "../../../src/modules/mcp/tools.js";
import { runStdioBridge } from "../../../cli/src/mcp/stdio-bridge.js";
import { answerOf, MCP_PATH, mcpClient, openMcpFixture, refusalOf, toolNamed, type McpFixture } from "./mcp-support.js";

let f: McpFixture;
let h: Harness, acme: Tenant, acmeIds: string[], globexIds: string[], client: Client, tools: Tool[];

beforeAll(async () => {
  f = await openMcpFixture("Mcp", {}, {
    acme: [
      { name: "berlin-1", status: "online", labels: { site: "berlin" } },
      { name: "berlin-2", status: "error", labels: { site: "berlin" } },
      { name: "paris-1", status: "offline", labels: { site: "paris" } },
    ],
    globex: [{ name: "globex-1", labels: { site: "berlin" } }],
  });
  ({ h, acme, acmeIds, globexIds, client, tools } = f);
});
afterAll(() => f?.close());

describe("tools/list", () => {
  it("lists every read-only procedure as a tool and no mutating one", () => {
    const expected = mcpTools().filter((t) => !t.mutation).map((t) => t.name);
    expect(tools.map((t) => t.name).sort()).toEqual([...expected].sort());
    expect(tools.length).toBeGreaterThan(80);
    for (const name of ["devices_list", "devices_get", "deployments_list", "audit_search"]) toolNamed(tools, name);
    for (const name of ["devices_update", "devices_delete", "groups_bulkDelete", "apiKeys_create", "remoteSessions_run", "remoteSessions_open"]) expect(tools.map((t) => t.name)).not.toContain(name);
    // neither the public operations nor the device's own
    for (const name of ["auth_login", "invitations_publicGet", "agent_heartbeat", "agent_componentPackage"]) expect(tools.map((t) => t.name)).not.toContain(name);
  });

  it("describes a tool from the procedure: summary, REST operation, input schema, annotations", () => {
    const list = toolNamed(tools, "devices_list");
    expect(list.title).toBe("List devices");
    expect(list.description).toContain("REST: GET /api/v1/devices");
    expect(list.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false, idempotentHint: true });
    const schema = list.inputSchema as { type: string; properties: Record<string, any> };
    expect(schema.type).toBe("object");
    expect(schema.properties.limit).toMatchObject({ type: "integer", maximum: 200 });
    expect(schema.properties.status.items.enum).toContain("online");
    // a query answered by POST is still a read
    expect(toolNamed(tools, "groups_query").annotations?.readOnlyHint).toBe(true);
    expect((toolNamed(tools, "devices_get").inputSchema as { required?: string[] }).required).toEqual(["id"]);
  });
});

describe("tools/call", () => {
  it("answers a read tool with the REST answer", async () => {
    const result = await client.callTool({ name: "devices_list", arguments: { labels: "site=berlin", sort: "name", order: "asc" } });
    const rest = await h.api("GET", "/api/v1/devices?labels=site=berlin&sort=name&order=asc", { key: acme.key });
    expect(rest.status).toBe(200);
    const answer = answerOf(result);
    expect(answer).toEqual(rest.body);
    expect(answer.items.map((d: { name: string }) => d.name)).toEqual(["berlin-1", "berlin-2"]);
    expect(result.structuredContent).toEqual(rest.body);
    const one = answerOf(await client.callTool({ name: "devices_get", arguments: { id: acmeIds[2] } }));
    expect(one).toEqual((await h.api("GET", `/api/v1/devices/${acmeIds[2]}`, { key: acme.key })).body);
  });

  it("answers invalid arguments with the API's 400 naming the field", async () => {
    const refusal = refusalOf(await client.callTool({ name: "devices_list", arguments: { limit: 500, status: ["sleeping"] } }));
    const rest = await h.api("GET", "/api/v1/devices?limit=500&status=sleeping", { key: acme.key });
    expect(rest.status).toBe(400);
    expect(refusal).toMatchObject({ status: 400, code: "BAD_REQUEST", message: rest.body.message });
    expect(refusal.message).toContain("limit");
    expect(refusal.message).toContain("status.0");
  });

  it("answers another tenant's device as not found, as REST does", async () => {
    const refusal = refusalOf(await client.callTool({ name: "devices_get", arguments: { id: globexIds[0] } }));
    const rest = await h.api("GET", `/api/v1/devices/${globexIds[0]}`, { key: acme.key });
    expect(rest.status).toBe(404);
    expect(refusal).toMatchObject({ status: 404, code: "NOT_FOUND", message: rest.body.message });
    // and lists only the caller's organization
    const names = answerOf(await client.callTool({ name: "devices_list", arguments: {} })).items.map((d: { name: string }) => d.name);
    expect(names).not.toContain("globex-1");
    expect(names).toHaveLength(3);
  });

  it("refuses a mutating tool: not callable, nothing changed", async () => {
    await expect(client.callTool({ name: "devices_delete", arguments: { id: acmeIds[0] } })).rejects.toThrow(/devices_delete disabled/);
    await expect(client.callTool({ name: "devices_addLabel", arguments: { id: acmeIds[0], key: "tier", value: "edge" } })).rejects.toThrow(/disabled/);
    const device = await h.services.prisma.device.findUniqueOrThrow({ where: { id: acmeIds[0] } });
    expect(device.labels).toEqual({ site: "berlin" });
    expect(await h.services.prisma.auditEntry.count({ where: { action: { in: ["devices.delete", "devices.addLabel"] } } })).toBe(0);
  });

  it("refuses a tool the key may not use with the API's 403 and its audit entry", async () => {
    const narrow = await h.createKey(acme.org.id, ["organizations:read"]);
    const limited = await mcpClient(h.url, { "x-api-key": narrow });
    try {
      // the list is the same: what a key may call is decided by the call, as in the API
      expect((await limited.listTools()).tools.length).toBe(tools.length);
      const refusal = refusalOf(await limited.callTool({ name: "devices_list", arguments: {} }));
      const rest = await h.api("GET", "/api/v1/devices", { key: narrow });
      expect(rest.status).toBe(403);
      expect(refusal).toMatchObject({ status: 403, code: "FORBIDDEN", message: rest.body.message });
      expect(refusal.message).toBe("Missing permission devices:read");
      const denials = await h.services.prisma.auditEntry.findMany({ where: { action: "permission.denied", organizationId: acme.org.id, message: { startsWith: "devices.list:" } } });
      expect(denials).toHaveLength(2); // the tool's and the REST call's
    } finally {
      await limited.close();
    }
  });

  it("accepts a bearer session as the API does", async () => {
    const token = await h.login(acme.user.email, acme.user.password);
    const bySession = await mcpClient(h.url, { authorization: `Bearer ${token}` });
    try {
      expect(answerOf(await bySession.callTool({ name: "devices_list", arguments: {} })).total).toBe(3);
    } finally {
      await bySession.close();
    }
  });
});

describe("authentication", () => {
  const initialize = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } };
  const post = (headers: Record<string, string>, body: unknown = initialize) =>
    fetch(h.url + MCP_PATH, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers }, body: JSON.stringify(body) });

  it("answers a request without a credential, or with a wrong one, with the API's 401", async () => {
    const credentials: Record<string, string>[] = [{}, { "x-api-key": "fm_" + "x".repeat(40) }, { authorization: "Bearer nonsense" }];
    for (const headers of credentials) {
      const res = await post(headers);
      expect(res.status).toBe(401);
      const body = (await res.json()) as { data: { requestId: string } };
      expect(body).toMatchObject({ code: "UNAUTHORIZED", data: { httpStatus: 401 } });
      expect(body.data.requestId).toBe(res.headers.get("x-request-id"));
    }
    const toolCall = await post({}, { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "devices_list", arguments: {} } });
    expect(toolCall.status).toBe(401);
    await expect(mcpClient(h.url, {})).rejects.toThrow();
  });

  it("serves a plain JSON-RPC request with a key, and refuses a body that is not JSON (415)", async () => {
    const res = await post({ "x-api-key": acme.key });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    const answer = JSON.parse(await res.text()) as { result: { serverInfo: { name: string } } };
    expect(answer.result.serverInfo.name).toBe("fleet-manager");
    const text = await fetch(h.url + MCP_PATH, { method: "POST", headers: { "content-type": "text/plain", "x-api-key": acme.key }, body: "hello" });
    expect(text.status).toBe(415);
  });

  it("answers curl's tools/call (accepting JSON and event streams) with one JSON body that JSON.parse reads", async () => {
    // the README's example: POST with the key, no initialize first, piped to jq
    const res = await post({ "x-api-key": acme.key }, { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "devices_list", arguments: { status: ["error"], labels: "site=berlin" } } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    const answer = JSON.parse(await res.text()) as { jsonrpc: string; id: number; result: { content: Array<{ text: string }>; structuredContent: unknown } };
    expect(answer).toMatchObject({ jsonrpc: "2.0", id: 1 });
    const rest = await h.api("GET", "/api/v1/devices?status=error&labels=site=berlin", { key: acme.key });
    expect(answer.result.structuredContent).toEqual(rest.body);
    expect(JSON.parse(answer.result.content[0].text).items.map((d: { name: string }) => d.name)).toEqual(["berlin-2"]);
  });

  it("answers GET and DELETE (no sessions) with 405, after authentication", async () => {
    for (const method of ["GET", "DELETE"]) {
      expect((await fetch(h.url + MCP_PATH, { method, headers: { accept: "text/event-stream", "x-api-key": acme.key } })).status).toBe(405);
      expect((await fetch(h.url + MCP_PATH, { method, headers: { accept: "text/event-stream" } })).status).toBe(401);
    }
  });
});

describe("the stdio bridge (fleet mcp)", () => {
  it("serves the service's tools on stdio and forwards calls as the key", async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ["--import", "tsx", path.resolve("cli/src/mcp/stdio-bridge-main.ts")],
      env: { PATH: process.env.PATH ?? "", FLEET_URL: h.url, FLEET_API_KEY: acme.key },
      stderr: "pipe",
    });
    const stdio = new Client({ name: "fleet-tests-stdio", version: "1.0.0" });
    await stdio.connect(transport);
    try {
      const listed = (await stdio.listTools()).tools;
      expect(listed.map((t) => t.name).sort()).toEqual(tools.map((t) => t.name).sort());
      expect(toolNamed(listed, "devices_list").annotations).toEqual(toolNamed(tools, "devices_list").annotations);
      expect(toolNamed(listed, "devices_list").inputSchema).toEqual(toolNamed(tools, "devices_list").inputSchema);
      const viaStdio = answerOf(await stdio.callTool({ name: "devices_list", arguments: { sort: "name", order: "asc" } }));
      expect(viaStdio).toEqual((await h.api("GET", "/api/v1/devices?sort=name&order=asc", { key: acme.key })).body);
      const refusal = refusalOf(await stdio.callTool({ name: "devices_get", arguments: { id: globexIds[0] } }));
      expect(refusal.status).toBe(404);
    } finally {
      await stdio.close();
    }
  });

  it("follows a session whose token the caller renews (token given as a function)", async () => {
    let token = await h.login(acme.user.email, acme.user.password);
    let asked = 0;
    const toBridge = new PassThrough();
    const fromBridge = new PassThrough();
    const bridge = await runStdioBridge({ url: h.url, token: () => (asked++, token), stdin: toBridge, stdout: fromBridge });
    // the client's end of the pipe pair: newline-delimited JSON-RPC, as on stdio
    const local = new Client({ name: "fleet-tests-in-process", version: "1.0.0" });
    await local.connect(new StdioServerTransport(fromBridge, toBridge));
    try {
      expect(answerOf(await local.callTool({ name: "devices_list", arguments: {} })).total).toBe(3);
      // the session ends: its token is refused from now on, and the caller signs in again
      expect((await h.api("POST", "/api/v1/auth/logout", { key: null, token })).status).toBeLessThan(300);
      expect((await h.api("GET", "/api/v1/devices", { key: null, token })).status).toBe(401);
      token = await h.login(acme.user.email, acme.user.password);
      const before = asked;
      expect(answerOf(await local.callTool({ name: "devices_list", arguments: {} })).total).toBe(3);
      expect(asked).toBeGreaterThan(before);
    } finally {
      await local.close();
      await bridge.close();
    }
  });

  it("exits 3 with the reason on stderr when the service refuses the key", async () => {
    const { spawn } = await import("node:child_process");
    const child = spawn(process.execPath, ["--import", "tsx", path.resolve("cli/src/mcp/stdio-bridge-main.ts")], {
      env: { PATH: process.env.PATH ?? "", FLEET_URL: h.url, FLEET_API_KEY: "fm_" + "y".repeat(40) },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (chunk) => (stderr += chunk));
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    expect(code).toBe(3);
    expect(stderr).toContain("refused the credential (401)");
  });
});
