// An MCP client of the service under test (the official SDK's, over streamable HTTP), the
// service with two tenants and their devices, and the reading of a tool's answer: the REST
// body on success, the API's error body on a refusal.
import { Client, StreamableHTTPClientTransport, type CallToolResult, type Tool } from "@modelcontextprotocol/client";
import { expect } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { insertDevices, type DeviceSpec } from "../agent/fleet-support.js";

export const MCP_PATH = "/api/v1/mcp";

/** A connected client sending `headers` (the credential) with every request. */
export async function mcpClient(baseUrl: string, headers: Record<string, string>): Promise<Client> {
  const client = new Client({ name: "fleet-tests", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(MCP_PATH, baseUrl), { requestInit: { headers } }));
  return client;
}

export function toolNamed(tools: Tool[], name: string): Tool {
  const tool = tools.find((t) => t.name === name);
  expect(tool, `tool ${name}`).toBeDefined();
  return tool!;
}

/** A successful call's answer: the JSON of its text, as the REST body reads. */
export function answerOf(result: CallToolResult): any {
  expect(result.isError ?? false, JSON.stringify(result.content)).toBe(false);
  const [content] = result.content;
  expect(content.type).toBe("text");
  return JSON.parse((content as { text: string }).text);
}

/** A refused call's error body: { status, code, message, data }. */
export function refusalOf(result: CallToolResult): { status: number; code: string; message: string; data: { httpStatus: number; requestId: string } } {
  expect(result.isError).toBe(true);
  const [content] = result.content;
  const body = JSON.parse((content as { text: string }).text);
  expect(result.structuredContent).toEqual(body);
  return body;
}

export interface McpFixture {
  h: Harness;
  acme: Tenant;
  globex: Tenant;
  acmeIds: string[];
  globexIds: string[];
  /** connected with acme's full key */
  client: Client;
  /** what the client's tools/list answered */
  tools: Tool[];
  close(): Promise<void>;
}

/** A service started with `env`, two tenants with their devices, and acme's MCP client. */
export async function openMcpFixture(name: string, env: Record<string, string>, devices: { acme: DeviceSpec[]; globex: DeviceSpec[] }): Promise<McpFixture> {
  const h = await createHarness(env);
  const acme = await h.createTenant(`Acme ${name}`);
  const globex = await h.createTenant(`Globex ${name}`);
  const acmeIds = await insertDevices(h, acme.org.id, devices.acme);
  const globexIds = await insertDevices(h, globex.org.id, devices.globex);
  const client = await mcpClient(h.url, { "x-api-key": acme.key });
  const { tools } = await client.listTools();
  return { h, acme, globex, acmeIds, globexIds, client, tools, close: async () => {
    await client.close();
    await h.close();
  } };
}
