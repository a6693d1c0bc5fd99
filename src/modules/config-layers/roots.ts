// Where a device lets configuration files be written. The agent writes only under its allowed
// roots, its own setting (FLEET_AGENT_CONFIG_ROOTS, default /etc/fleet/ and its state
// directory's files/), and reports them with its facts (`configRoots`, colon-separated). A
// revision with a file outside the roots of a device it applies to would only fail there, at
// every heartbeat; it is refused when written instead, naming the file and a device. Devices
// that never reported their roots (agents before this, simulated ones) are not judged here:
// their agent refuses such a file itself.
import { Prisma } from "../../generated/prisma/client.js";
import type { DbTx } from "../../db/client.js";
import type { Labels } from "../devices/labels.js";

/** The fact an agent reports its allowed roots in. */
export const CONFIG_ROOTS_FACT = "configRoots";

export interface LayerPlacement {
  kind: string;
  selector: unknown;
  deviceId: string | null;
}

/** A file's path and the input field that named it (["files", "2", "path"]; for a rollback, ["revision"]). */
export interface PlacedFile {
  path: string;
  field: string[];
}

export interface RootsRefusal {
  field: string[];
  message: string;
}

/** Whether `path` lies under one of `roots` (each ends with "/"). */
export function underRoots(path: string, roots: readonly string[]): boolean {
  return roots.some((root) => path.startsWith(root.endsWith("/") ? root : `${root}/`));
}

/**
 * The first file outside the roots of a device the layer applies to, or null. One grouped
 * statement: the distinct root sets of those devices (a fleet has few), with how many devices
 * hold each and one of their names.
 */
export async function rootsRefusal(db: DbTx, organizationId: string, layer: LayerPlacement, files: PlacedFile[]): Promise<RootsRefusal | null> {
  if (!files.length) return null;
  const applies =
    layer.kind === "device" ? Prisma.sql`d."id" = ${layer.deviceId}::uuid`
    : layer.kind === "selector" ? Prisma.sql`d."labels" @> ${JSON.stringify((layer.selector ?? {}) as Labels)}::jsonb`
    : Prisma.sql`TRUE`;
  const sets = await db.$queryRaw<Array<{ roots: string; devices: number; example: string }>>`
    SELECT d."facts"->>${CONFIG_ROOTS_FACT} AS "roots", count(*)::int AS "devices", min(d."name") AS "example"
      FROM "Device" d
     WHERE d."organizationId" = ${organizationId}::uuid AND d."facts" ? ${CONFIG_ROOTS_FACT} AND ${applies}
     GROUP BY 1 ORDER BY 2 DESC`;
  for (const set of sets) {
    const roots = set.roots.split(":").filter(Boolean);
    const outside = files.find((f) => !underRoots(f.path, roots));
    if (outside) {
      const who = set.devices === 1 ? `device ${set.example}` : `${set.devices} devices it applies to (${set.example} among them)`;
      return { field: outside.field, message: `${outside.path} is outside the allowed roots of ${who}: ${roots.join(", ")} (the agent's FLEET_AGENT_CONFIG_ROOTS)` };
    }
  }
  return null;
}
