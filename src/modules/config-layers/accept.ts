// Accepting a drifted file as the device's own value (docs/configuration.md, "Drift"): the agent
// reports a file changed by hand with its content (base64, up to the layer file limit); the
// service keeps that content sealed on the device's DeviceConfigState (it may hold what a
// secret rendered), and `POST /config-layers/accept` writes it into the device's override
// layer (created when it has none) as a new revision. The revision's file then equals what is
// on disk, so the agent applies it without rewriting the file and the device is in sync.
import { z } from "zod";
import type { DbTx } from "../../db/client.js";
import type { SecretBox } from "../../lib/crypto.js";
import type { Principal } from "../../trpc/principal.js";
import { conflict, notFound } from "../../trpc/errors.js";
import { assertNotManaged } from "../config/guard.js";
import { LIMITS, updateLayerInput, type FileInput } from "./schemas.js";
import type { ConfigurationReport } from "./schemas.js";
import { createLayer, effectiveOf, getLayer, updateLayer } from "./service.js";

export const acceptInput = z.object({
  deviceId: z.string().uuid(),
  paths: z.array(z.string().max(1024)).min(1).max(100).optional().describe("the drifted files to accept; absent: every one the device reported"),
});

export const acceptOutput = z.object({
  deviceId: z.string().uuid(),
  layerId: z.string().uuid().describe("the device's override layer"),
  layer: z.string(),
  revision: z.number().int().describe("the override layer's new revision"),
  created: z.boolean().describe("the override layer did not exist before"),
  paths: z.array(z.string()).describe("the files accepted"),
});

/** A drift entry as DeviceConfigState keeps it: the content sealed, never answered. */
interface StoredDrift {
  path: string;
  sha256?: string;
  contentSealed?: string;
}

/** The report as stored: each reported content sealed with the service's key. */
export function sealDriftContent(secrets: SecretBox, report: ConfigurationReport): ConfigurationReport {
  if (!report.drift?.some((d) => d.contentBase64 !== undefined)) return report;
  const drift = report.drift.map(({ contentBase64, ...d }) => (contentBase64 === undefined ? d : { ...d, contentSealed: secrets.encrypt(contentBase64) }));
  return { ...report, drift: drift as ConfigurationReport["drift"] };
}

/** The current files of a layer as the update input takes them (every field kept). */
function filesOfLayer(files: Awaited<ReturnType<typeof getLayer>>["content"]["files"]): FileInput[] {
  return files.map((f) => ({
    path: f.path, mode: f.mode, ...(f.owner ? { owner: f.owner } : {}), template: f.template,
    ...(f.binary ? { contentBase64: f.contentBase64! } : { content: f.content ?? "" }),
  }));
}

const overrideName = (device: { id: string; name: string }) => {
  const slug = device.name.toLowerCase().replace(/[^a-z0-9._-]+/g, "-").replace(/^[^a-z0-9]+/, "").slice(0, 80);
  return slug ? `${slug}-override` : `device-${device.id.slice(0, 8)}-override`;
};

export async function acceptDrift(
  db: DbTx, secrets: SecretBox, principal: Principal, input: z.infer<typeof acceptInput>,
): Promise<z.infer<typeof acceptOutput>> {
  const { organizationId } = principal;
  const device = await db.device.findFirst({ where: { id: input.deviceId, organizationId }, select: { id: true, name: true, configState: true } });
  if (!device) throw notFound("Device");
  const drift = (device.configState?.drift ?? []) as unknown as StoredDrift[];
  if (!drift.length) throw conflict(`Device "${device.name}" reported no files changed by hand: nothing to accept`);
  const byPath = new Map(drift.map((d) => [d.path, d]));
  const paths = [...new Set(input.paths ?? drift.map((d) => d.path))];
  const effective = await effectiveOf(db, secrets, organizationId, device.id);
  const accepted: FileInput[] = paths.map((path) => {
    const entry = byPath.get(path);
    if (!entry) throw conflict(`paths: ${path} did not drift on device "${device.name}" (drifted: ${drift.map((d) => d.path).join(", ")})`);
    if (!entry.sha256) throw conflict(`paths: ${path} was removed on device "${device.name}": a layer cannot declare a missing file; restore it or take it out of its layer`);
    if (!entry.contentSealed) {
      throw conflict(`paths: device "${device.name}" reported no content of ${path}: it is over ${LIMITS.fileBytes} bytes (the layer file limit); restore it or put its content in a layer`);
    }
    const file = effective.files.find((f) => f.path === path);
    if (!file) throw conflict(`paths: ${path} is no longer in the configuration of device "${device.name}": nothing to override`);
    if (file.secret) throw conflict(`paths: ${path} takes in a secret: its content is not copied into a layer; restore it`);
    return { path, contentBase64: secrets.decrypt(entry.contentSealed), mode: file.mode, ...(file.owner ? { owner: file.owner } : {}), template: false };
  });

  const comment = `accepted from device "${device.name}": ${paths.join(", ")}`;
  const own = await db.configLayer.findFirst({ where: { organizationId, kind: "device", deviceId: device.id }, select: { id: true } });
  let layer;
  if (own) {
    await assertNotManaged(db, "ConfigLayer", organizationId, own.id);
    const files = filesOfLayer((await getLayer(db, organizationId, own.id)).content.files).filter((f) => !paths.includes(f.path));
    const parsed = updateLayerInput.safeParse({ id: own.id, files: [...files, ...accepted], comment });
    if (!parsed.success) throw conflict(`files: the override layer cannot take the files: ${parsed.error.issues[0]!.message}`);
    layer = (await updateLayer(db, secrets, principal, parsed.data)).layer;
  } else {
    let name = overrideName(device);
    if (await db.configLayer.findFirst({ where: { organizationId, name }, select: { id: true } })) name = `device-${device.id}`;
    layer = await createLayer(db, secrets, principal, { name, kind: "device", deviceId: device.id, files: accepted, comment });
  }
  // the accepted paths drift no more: the next revision holds what the device has
  await db.deviceConfigState.update({ where: { deviceId: device.id }, data: { drift: drift.filter((d) => !paths.includes(d.path)) as object[] } });
  return { deviceId: device.id, layerId: layer.id, layer: layer.name, revision: layer.revision, created: !own, paths };
}
