// Reading an organization's layers with the content of their current revisions, in one
// statement, as the pure computation (effective.ts) takes them.
import { Prisma } from "../../generated/prisma/client.js";
import type { DbTx } from "../../db/client.js";
import type { SecretBox } from "../../lib/crypto.js";
import { labelsOf } from "../devices/labels.js";
import type { FileSpec, LayerKind, LayerState, SecretEntry } from "./effective.js";

export interface LayerRow {
  id: string;
  name: string;
  kind: string;
  order: number | null;
  selector: unknown;
  deviceId: string | null;
  revision: number;
  variables: unknown;
  files: unknown;
  secretsSealed: string | null;
  activation: unknown;
}

/** Unseals a revision's secrets: { NAME: value }. */
export function openLayerSecrets(secrets: SecretBox, sealed: string | null): Record<string, string> {
  return sealed ? (JSON.parse(secrets.decrypt(sealed)) as Record<string, string>) : {};
}

export function sealLayerSecrets(secrets: SecretBox, values: Record<string, string>): string | null {
  return Object.keys(values).length ? secrets.encrypt(JSON.stringify(values)) : null;
}

/** A row as the computation sees it; secrets with their values (for delivery) and fingerprints. */
export function layerStateOf(secrets: SecretBox, row: LayerRow): LayerState {
  const opened = openLayerSecrets(secrets, row.secretsSealed);
  const entries: Record<string, SecretEntry> = {};
  for (const [name, value] of Object.entries(opened)) entries[name] = { value, fingerprint: `secret:${secrets.fingerprint(value)}` };
  return {
    id: row.id,
    name: row.name,
    kind: row.kind as LayerKind,
    order: row.order,
    selector: row.kind === "selector" ? labelsOf(row.selector) : null,
    deviceId: row.deviceId,
    revision: row.revision,
    variables: (row.variables ?? {}) as Record<string, string>,
    files: (row.files ?? []) as FileSpec[],
    secrets: entries,
    activation: (row.activation ?? null) as { command: string[] } | null,
  };
}

/**
 * Which revision of each layer: `current`, the newest (what writes check the layer set with);
 * `released`, what devices get outside a rollout (the heartbeat, the effective view, the
 * preview; docs/configuration.md, "Rollout").
 */
export type RevisionChoice = "current" | "released";
const revisionColumn = (at: RevisionChoice) => Prisma.raw(at === "current" ? `l."currentRevision"` : `l."releasedRevision"`);

/**
 * The organization's layers at their current (or released) revisions: every one, or the shared
 * ones (all but device overrides) and the overrides of `deviceIds` only (a page of devices, one
 * heartbeat). One statement over ConfigLayer(organizationId) and the revision's unique key.
 */
export async function loadLayers(db: DbTx, secrets: SecretBox, organizationId: string, deviceIds?: string[], at: RevisionChoice = "current"): Promise<LayerState[]> {
  const only = deviceIds ? JSON.stringify(deviceIds) : null;
  const rows = await db.$queryRaw<LayerRow[]>`
    SELECT l."id"::text AS "id", l."name", l."kind", l."order", l."selector", l."deviceId"::text AS "deviceId",
           r."revision", r."variables", r."files", r."secretsSealed", r."activation"
      FROM "ConfigLayer" l
      JOIN "ConfigLayerRevision" r ON r."layerId" = l."id" AND r."revision" = ${revisionColumn(at)}
     WHERE l."organizationId" = ${organizationId}::uuid
       AND (${only}::jsonb IS NULL OR l."kind" <> 'device'
            OR l."deviceId"::text IN (SELECT jsonb_array_elements_text(${only}::jsonb)))`;
  return rows.map((row) => layerStateOf(secrets, row));
}

/** The override layer of one device at its released revision, if it has one (ConfigLayer(deviceId)). */
export async function loadDeviceLayer(db: DbTx, secrets: SecretBox, deviceId: string): Promise<LayerState | null> {
  const rows = await db.$queryRaw<LayerRow[]>`
    SELECT l."id"::text AS "id", l."name", l."kind", l."order", l."selector", l."deviceId"::text AS "deviceId",
           r."revision", r."variables", r."files", r."secretsSealed", r."activation"
      FROM "ConfigLayer" l
      JOIN "ConfigLayerRevision" r ON r."layerId" = l."id" AND r."revision" = l."releasedRevision"
     WHERE l."deviceId" = ${deviceId}::uuid`;
  return rows.length ? layerStateOf(secrets, rows[0]) : null;
}

/**
 * Given revisions of layers ({ layerId, revision }: a rollout's), with their layers' placement
 * as it is now; one statement over the revisions' unique key, whatever their number.
 */
export async function loadLayerRevisions(db: DbTx, secrets: SecretBox, wanted: Array<{ layerId: string; revision: number }>): Promise<LayerState[]> {
  if (!wanted.length) return [];
  const rows = await db.$queryRaw<LayerRow[]>`
    SELECT l."id"::text AS "id", l."name", l."kind", l."order", l."selector", l."deviceId"::text AS "deviceId",
           r."revision", r."variables", r."files", r."secretsSealed", r."activation"
      FROM jsonb_to_recordset(${JSON.stringify(wanted)}::jsonb) AS w("layerId" uuid, "revision" int)
      JOIN "ConfigLayerRevision" r ON r."layerId" = w."layerId" AND r."revision" = w."revision"
      JOIN "ConfigLayer" l ON l."id" = r."layerId"`;
  return rows.map((row) => layerStateOf(secrets, row));
}
