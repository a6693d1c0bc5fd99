// POST /users/export: a CSV (RFC 4180) or JSON download of the users the caller may see.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import { csvField } from "../../../src/modules/users/export.js";
import { createPerson, issuePaths } from "./support.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Export");
  globex = await h.createTenant("Globex Export");
});
afterAll(() => h?.close());

/** A strict RFC 4180 reader, to check what the export writes. */
function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let field = "";
  let i = 0;
  while (i < text.length) {
    if (text[i] === '"') {
      i++;
      for (;;) {
        if (text[i] === '"' && text[i + 1] === '"') (field += '"'), (i += 2);
        else if (text[i] === '"') { i++; break; }
        else field += text[i++];
      }
    } else if (text[i] === ",") (record.push(field), (field = ""), i++);
    else if (text[i] === "\r" && text[i + 1] === "\n") (record.push(field), records.push(record), (record = []), (field = ""), (i += 2));
    else field += text[i++];
  }
  expect(record, "the file ends with CRLF").toEqual([]);
  return records;
}

const exportUsers = (body: unknown, key?: string) => h.api("POST", "/api/v1/users/export", { body, key });

describe("POST /users/export", () => {
  it("answers CSV by default, as an attachment, with every user a Super Admin may see", async () => {
    const tricky = await createPerson(h, { name: 'Ann "Quote", Jr.\nsecond line', member: { organizationId: acme.org.id, role: "viewer" } });
    const formula = await createPerson(h, { name: "=HYPERLINK(\"http://evil\")" });
    const res = await exportUsers({});
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    expect(res.headers.get("content-disposition")).toMatch(/^attachment; filename="users-\d{4}-\d{2}-\d{2}\.csv"$/);
    const rows = parseCsv(res.text);
    expect(rows[0]).toEqual([
      "id", "email", "name", "status", "isSuperAdmin", "emailVerified", "hasPassword",
      "identityIssuer", "identitySubject", "lastLoginAt", "createdAt", "organizations",
    ]);
    expect(rows.length - 1).toBe(await h.services.prisma.user.count());
    const byId = new Map(rows.slice(1).map((r) => [r[0], r]));
    expect(byId.get(tricky.id)?.slice(1, 4)).toEqual([tricky.email, 'Ann "Quote", Jr.\nsecond line', "active"]);
    expect(byId.get(tricky.id)?.[11]).toBe(`${acme.org.slug}:viewer`);
    expect(byId.get(formula.id)?.[2]).toBe("'=HYPERLINK(\"http://evil\")"); // not run as a formula
    expect(res.text).not.toMatch(/scrypt\$|passwordHash/);

    const audit = await h.services.prisma.auditEntry.findFirstOrThrow({ where: { action: "users.export" }, orderBy: { createdAt: "desc" } });
    expect(audit.message).toBe(`exported ${rows.length - 1} users as csv`);
  });

  it("answers JSON with the user objects, filtered", async () => {
    await createPerson(h, { status: "disabled", member: { organizationId: acme.org.id, role: "viewer" } });
    const res = await exportUsers({ format: "json", status: "disabled" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(res.headers.get("content-disposition")).toMatch(/filename="users-[\d-]+\.json"/);
    expect(Array.isArray(res.body)).toBe(true);
    expect(res.body.length).toBe(await h.services.prisma.user.count({ where: { status: "disabled" } }));
    expect(res.body[0]).toMatchObject({ status: "disabled", hasPassword: true });
    expect(res.body[0].passwordHash).toBeUndefined();
    const none = await exportUsers({ format: "json", search: "nobody-matches-this" });
    expect(none.body).toEqual([]);
  });

  it("gives anyone else with users:read only the members of their organization", async () => {
    const res = await exportUsers({ format: "json" }, acme.key);
    expect(res.status).toBe(200);
    const ids = res.body.map((u: { id: string }) => u.id);
    expect(ids).toContain(acme.user.id);
    expect(ids).not.toContain(globex.user.id);
    expect(ids.length).toBe(await h.services.prisma.membership.count({ where: { organizationId: acme.org.id } }));
    for (const u of res.body) expect(u.organizations.every((m: { organizationId: string }) => m.organizationId === acme.org.id)).toBe(true);
  });

  it("answers 400 naming the field, 415 for a body that is not JSON", async () => {
    const bad = await exportUsers({ format: "xml" });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe("BAD_REQUEST");
    expect(issuePaths(bad.body)).toContain("format");
    const flag = await exportUsers({ superAdmin: "false" });
    expect(issuePaths(flag.body)).toContain("superAdmin");
    const text = await h.api("POST", "/api/v1/users/export", { raw: "format=csv", headers: { "content-type": "text/plain" } });
    expect(text.status).toBe(415);
  });

  it("is secured (users:read), with the error body of every other operation", async () => {
    await expectSecured(h, acme, globex, { method: "POST", path: "/api/v1/users/export", body: {}, permission: "users:read" });
    const none = await exportUsers({}, null as unknown as string);
    expect(none.body).toMatchObject({ code: "UNAUTHORIZED", data: { code: "UNAUTHORIZED", httpStatus: 401 } });
    expect(none.body.data.requestId).toBe(none.headers.get("x-request-id"));
  });

  it("is listed in openapi.json", async () => {
    const doc = await h.api("GET", "/api/v1/openapi.json", { key: null });
    expect(Object.keys(doc.body.paths["/users/export"].post.responses[200].content)).toEqual(["text/csv", "application/json"]);
  });
});

it("csvField quotes per RFC 4180", () => {
  expect(csvField("plain")).toBe("plain");
  expect(csvField("a,b")).toBe('"a,b"');
  expect(csvField('say "hi"')).toBe('"say ""hi"""');
  expect(csvField("two\r\nlines")).toBe('"two\r\nlines"');
  expect(csvField(null)).toBe("");
  expect(csvField(true)).toBe("true");
  expect(csvField("+1")).toBe("'+1");
});
