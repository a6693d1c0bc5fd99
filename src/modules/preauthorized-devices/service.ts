// Pre-authorized devices: import the factory's list (JSON or CSV, one set-based upsert), list,
// remove. How an enrolling device is matched against it: ../enrollment-requests/admission.ts.
import { parse } from "csv-parse/sync";
import type { DbTx } from "../../db/client.js";
import type { Principal } from "../../trpc/principal.js";
import { invalidField, notFound } from "../../trpc/errors.js";
import { UTC_NOW } from "../devices/sql.js";
import { parseSelector } from "../devices/selector.js";
import { MAX_IMPORT_ENTRIES, preauthorizedEntryInput, type PreauthorizedEntry } from "./schemas.js";

const CSV_COLUMNS = new Set(["deviceId", "keyFingerprint", "publicKey", "ekHash", "labels"]);

/** CSV records as the JSON entries they stand for; a bad file is a 400 naming the line. */
function entriesOfCsv(text: string): unknown[] {
  let records: Record<string, string>[];
  try {
    records = parse(text, { columns: true, skip_empty_lines: true, trim: true, bom: true, max_record_size: 64 * 1024 });
  } catch (err) {
    throw invalidField("csv", `not readable as CSV: ${(err as Error).message}`);
  }
  if (records.length > MAX_IMPORT_ENTRIES) throw invalidField("csv", `at most ${MAX_IMPORT_ENTRIES} devices per import`);
  const unknown = Object.keys(records[0] ?? {}).filter((c) => !CSV_COLUMNS.has(c));
  if (unknown.length) throw invalidField("csv", `unknown column ${unknown.map((c) => JSON.stringify(c)).join(", ")}; the columns are ${[...CSV_COLUMNS].join(", ")}`);
  return records.map((r, i) => {
    const entry: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(r)) if (v !== "" && k !== "labels") entry[k] = v;
    if (r.labels) {
      try {
        entry.labels = parseSelector(r.labels);
      } catch (err) {
        throw invalidField("csv", `line ${i + 2}: labels: ${(err as Error).message}`);
      }
    }
    return entry;
  });
}

/** Validates every entry (400 naming the first bad one) and refuses an id listed twice. */
export function entriesOf(input: { devices?: unknown[]; csv?: string }): PreauthorizedEntry[] {
  const raw = input.csv !== undefined ? entriesOfCsv(input.csv) : input.devices!;
  const field = input.csv !== undefined ? "csv" : "devices";
  const seen = new Set<string>();
  return raw.map((item, i) => {
    const parsed = preauthorizedEntryInput.safeParse(item);
    const where = input.csv !== undefined ? `line ${i + 2}` : `devices.${i}`;
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw invalidField(field, `${where}${issue.path.length ? `.${issue.path.join(".")}` : ""}: ${issue.message}`);
    }
    if (seen.has(parsed.data.reportedDeviceId)) throw invalidField(field, `${where}: device id "${parsed.data.reportedDeviceId}" is listed twice`);
    seen.add(parsed.data.reportedDeviceId);
    return parsed.data;
  });
}

/** One statement: new ids are added, listed ones replaced (their key, EK hash and labels). */
export async function importPreauthorized(db: DbTx, principal: Principal, entries: PreauthorizedEntry[]) {
  if (entries.length === 0) return { created: 0, updated: 0 };
  const rows = await db.$queryRaw<{ created: boolean }[]>`
    INSERT INTO "PreauthorizedDevice" ("id", "organizationId", "reportedDeviceId", "keyFingerprint", "ekHash", "labels", "createdById", "createdAt", "updatedAt")
    SELECT gen_random_uuid(), ${principal.organizationId}::uuid, x."reportedDeviceId", x."keyFingerprint", x."ekHash", x."labels",
           ${principal.userId}::uuid, ${UTC_NOW}, ${UTC_NOW}
      FROM jsonb_to_recordset(${JSON.stringify(entries)}::jsonb) AS x("reportedDeviceId" text, "keyFingerprint" text, "ekHash" text, "labels" jsonb)
    ON CONFLICT ("organizationId", "reportedDeviceId") DO UPDATE
       SET "keyFingerprint" = EXCLUDED."keyFingerprint", "ekHash" = EXCLUDED."ekHash", "labels" = EXCLUDED."labels", "updatedAt" = EXCLUDED."updatedAt"
    RETURNING (xmax = 0) AS "created"`;
  const created = rows.filter((r) => r.created).length;
  return { created, updated: rows.length - created };
}

export async function listPreauthorized(db: DbTx, organizationId: string, query: { search?: string; limit: number; offset: number }) {
  const where = { organizationId, ...(query.search ? { reportedDeviceId: { contains: query.search, mode: "insensitive" as const } } : {}) };
  const [rows, total] = await Promise.all([
    db.preauthorizedDevice.findMany({ where, orderBy: [{ createdAt: "desc" }, { reportedDeviceId: "asc" }], take: query.limit, skip: query.offset }),
    db.preauthorizedDevice.count({ where }),
  ]);
  return { rows, total };
}

export async function deletePreauthorized(db: DbTx, organizationId: string, id: string) {
  const row = await db.preauthorizedDevice.findFirst({ where: { id, organizationId } });
  if (!row) throw notFound("Pre-authorized device");
  await db.preauthorizedDevice.delete({ where: { id } });
  return row;
}
