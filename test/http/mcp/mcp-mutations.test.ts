// The MCP server started with MCP_ALLOW_MUTATIONS=1: the mutating procedures are tools too,
// with annotations from their REST method, and a call changes what the REST call would, as
// the caller, with its audit entry; refused by permission or for another tenant's device as
// the API refuses it, nothing changed; every MCP request spends one of the caller's budget;
// and `fleet mcp --read-only` (the CLI as a subprocess) narrows the tools to the read-only ones.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import type { Tool } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Harness, Tenant } from "../../support/harness.js";
import { mcpTools } from "../../../src/modules/mcp/tools.js";
import { answerOf, MCP_PATH, mcpClient, openMcpFixture, refusalOf, toolNamed, type McpFixture } from "./mcp-support.js";

// requests per minute of one key: this file spends fewer of acme.key's; the rate test uses a key of its own
const BUDGET = 30;

let f: McpFixture;
let h: Harness, acme: Tenant, acmeIds: string[], globexIds: string[], client: Client, tools: Tool[];

beforeAll(async () => {
  f = await openMcpFixture("Mcp Writes", { MCP_ALLOW_MUTATIONS: "1", RATE_LIMIT_PER_CREDENTIAL: String(BUDGET) }, {
    acme: [{ name: "berlin-1", labels: { site: "berlin" } }, { name: "berlin-2", labels: { site: "berlin" } }],
    globex: [{ name: "globex-1", labels: { site: "berlin" } }],
  });
  ({ h, acme, acmeIds, globexIds, client, tools } = f);
});
afterAll(() => f?.close());

describe("tools/list with mutations enabled", () => {
  it("lists every procedure's tool, the mutating ones annotated from their method", () => {
    expect(tools.map((t) => t.name).sort()).toEqual(mcpTools().map((t) => t.name).sort());
    expect(tools.filter((t) => t.annotations?.readOnlyHint === false).length).toBeGreaterThan(80);
    expect(toolNamed(tools, "devices_delete").annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true, idempotentHint: true });
    expect(toolNamed(tools, "devices_update").annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false, idempotentHint: false });
    expect(toolNamed(tools, "devices_addLabel").annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false, idempotentHint: false });
    expect(toolNamed(tools, "devices_list").annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false, idempotentHint: true });
    // a POST that destroys says so in its meta (mcp: { destructive: true })
    expect(toolNamed(tools, "groups_bulkDelete").annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true, idempotentHint: false });
    expect(toolNamed(tools, "deviceCertificates_revoke").annotations?.destructiveHint).toBe(true);
    expect(toolNamed(tools, "groups_bulkLabels").annotations?.destructiveHint).toBe(false);
    // a command on a device, answered whole: the way an MCP client reaches one (no WebSocket)
    expect(toolNamed(tools, "remoteSessions_run").annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false });
  });
});

describe("a mutating tool", () => {
  it("changes what the REST call changes, as the caller, audited", async () => {
    const answer = answerOf(await client.callTool({ name: "devices_addLabel", arguments: { id: acmeIds[0], key: "tier", value: "edge" } }));
    const rest = await h.api("GET", `/api/v1/devices/${acmeIds[0]}`, { key: acme.key });
    expect(rest.body.labels).toEqual({ site: "berlin", tier: "edge" });
    expect(answer.labels).toEqual(rest.body.labels);
    const audit = await h.services.prisma.auditEntry.findFirstOrThrow({ where: { action: "devices.addLabel", entityId: acmeIds[0] } });
    const key = await h.services.prisma.apiKey.findFirstOrThrow({ where: { organizationId: acme.org.id, createdById: acme.user.id } });
    expect(audit).toMatchObject({ outcome: "success", organizationId: acme.org.id, actorType: "api_key", actorId: key.id, userId: acme.user.id });
    expect(audit.changes).toMatchObject({ id: acmeIds[0], value: "edge" }); // the input, secrets masked as in every entry
  });

  it("is refused by permission with the API's 403, nothing changed", async () => {
    const reader = await h.createKey(acme.org.id, ["devices:read"]);
    const limited = await mcpClient(h.url, { "x-api-key": reader });
    try {
      const refusal = refusalOf(await limited.callTool({ name: "devices_delete", arguments: { id: acmeIds[1] } }));
      const rest = await h.api("DELETE", `/api/v1/devices/${acmeIds[1]}`, { key: reader });
      expect(rest.status).toBe(403);
      expect(refusal).toMatchObject({ status: 403, code: "FORBIDDEN", message: rest.body.message });
      expect(refusal.message).toBe("Missing permission devices:write");
      expect(await h.services.prisma.device.count({ where: { id: acmeIds[1] } })).toBe(1);
      expect(await h.services.prisma.auditEntry.count({ where: { action: "devices.delete" } })).toBe(0);
    } finally {
      await limited.close();
    }
  });

  it("answers another tenant's device as not found, nothing changed", async () => {
    const refusal = refusalOf(await client.callTool({ name: "devices_delete", arguments: { id: globexIds[0] } }));
    const rest = await h.api("DELETE", `/api/v1/devices/${globexIds[0]}`, { key: acme.key });
    expect(rest.status).toBe(404);
    expect(refusal).toMatchObject({ status: 404, code: "NOT_FOUND", message: rest.body.message });
    expect(await h.services.prisma.device.count({ where: { id: globexIds[0] } })).toBe(1);
  });

  it("deletes the caller's own device, as DELETE /devices/{id} does", async () => {
    const result = await client.callTool({ name: "devices_delete", arguments: { id: acmeIds[1] } });
    expect(result.isError ?? false).toBe(false);
    expect((await h.api("GET", `/api/v1/devices/${acmeIds[1]}`, { key: acme.key })).status).toBe(404);
    expect(await h.services.prisma.auditEntry.count({ where: { action: "devices.delete", entityId: acmeIds[1], outcome: "success" } })).toBe(1);
  });

  it("is refused with 400 naming the field for invalid arguments, nothing changed", async () => {
    const refusal = refusalOf(await client.callTool({ name: "devices_addLabel", arguments: { id: acmeIds[0], key: "", value: "x" } }));
    expect(refusal).toMatchObject({ status: 400, code: "BAD_REQUEST" });
    expect(refusal.message).toContain("key");
    const device = await h.services.prisma.device.findUniqueOrThrow({ where: { id: acmeIds[0] } });
    expect(device.labels).toEqual({ site: "berlin", tier: "edge" });
  });
});

describe("rate limits", () => {
  it("spend one request of the key's budget per MCP request, a tool call included, then 429 as the API", async () => {
    const key = await h.createKey(acme.org.id, ["*"]);
    const post = (body: unknown) =>
      fetch(h.url + MCP_PATH, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "x-api-key": key }, body: JSON.stringify(body) });
    const call = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "devices_get", arguments: { id: acmeIds[0] } } };
    const list = { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} };
    for (let i = 0; i < BUDGET; i++) {
      const res = await post(i % 2 ? list : call);
      expect(res.status, await res.text()).toBe(200);
    }
    const over = await post(call);
    expect(over.status).toBe(429);
    expect(Number(over.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await over.json()).toMatchObject({ code: "TOO_MANY_REQUESTS", data: { httpStatus: 429 } });
    expect((await h.api("GET", "/api/v1/devices", { key })).status).toBe(429); // the same budget as REST
  });
});

describe("fleet mcp --read-only", () => {
  it("offers only the read-only tools of a service that offers mutations, and forwards calls", async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-mcp-home-"));
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [path.resolve("cli/bin/fleet.js"), "mcp", "--read-only"],
      env: { PATH: process.env.PATH ?? "", HOME: home, XDG_CONFIG_HOME: home, FLEET_URL: h.url, FLEET_API_KEY: acme.key },
      stderr: "pipe",
    });
    const stdio = new Client({ name: "fleet-tests-cli", version: "1.0.0" });
    try {
      await stdio.connect(transport);
      const listed = (await stdio.listTools()).tools;
      expect(listed.map((t) => t.name).sort()).toEqual(tools.filter((t) => t.annotations?.readOnlyHint).map((t) => t.name).sort());
      expect(listed.map((t) => t.name)).not.toContain("devices_delete");
      await expect(stdio.callTool({ name: "devices_delete", arguments: { id: acmeIds[0] } })).rejects.toThrow(/devices_delete/);
      const device = answerOf(await stdio.callTool({ name: "devices_get", arguments: { id: acmeIds[0] } }));
      expect(device).toEqual((await h.api("GET", `/api/v1/devices/${acmeIds[0]}`, { key: acme.key })).body);
      expect(await h.services.prisma.device.count({ where: { id: acmeIds[0] } })).toBe(1);
    } finally {
      await stdio.close();
      fs.rmSync(home, { recursive: true, force: true });
    }
  });
});
