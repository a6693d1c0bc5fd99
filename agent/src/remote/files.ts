// file-read and file-write: copies checked by size and SHA-256, inside the device's allowed roots
// (remoteAccess.files.roots). A path is resolved first (symlinks and `..`, realpath of the file or
// of the directory it goes into), and only what resolves inside a root is served; anything else
// is refused naming the rule. They run with the agent's own rights (root on a device: that is
// what writing /etc/app/app.conf needs), which is why the roots, the per-kind switches and the
// size cap are the device's to set.
//
// read: { size, mode } on channel 3, the bytes on 1, then { sha256 } on 3 and [255, 1].
// write: the bytes on 0 until [255, 0]; they go to a temporary file beside the target, which
// replaces the target (rename, after fsync) only when the size and the SHA-256 announced match;
// answered { size, sha256 } on 3. A stream that ends early leaves the target untouched.
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { CLOSE, STDIN, STDOUT } from "./frames.js";
import { pipeToLeg, writeFromLeg, type DeviceLeg } from "./leg.js";
import { refuse, type Offer, type Prepared, type SessionContext } from "./offer.js";

/** The roots as they resolve (a root that does not exist serves nothing). */
function resolvedRoots(roots: string[]): string[] {
  return roots.flatMap((root) => {
    try {
      return [fs.realpathSync(root)];
    } catch {
      return [];
    }
  });
}

function inside(resolved: string, roots: string[]): boolean {
  return resolvedRoots(roots).some((root) => resolved === root || resolved.startsWith(root === "/" ? "/" : `${root}/`));
}

function outsideRoots(asked: string, resolved: string, roots: string[]): string {
  return `${asked}${resolved !== asked ? ` (it resolves to ${resolved})` : ""} is outside the device's allowed roots (remoteAccess.files.roots: ${roots.join(", ") || "none"})`;
}

/** A mode as the offer gives it: a number, or an octal string ("0644"); only permission bits (never setuid, setgid or sticky). */
export function parseMode(mode: unknown): number | null {
  if (typeof mode === "number" && Number.isInteger(mode) && mode >= 0) return mode & 0o777;
  if (typeof mode === "string" && /^0?[0-7]{3,4}$/.test(mode)) return parseInt(mode, 8) & 0o777;
  return null;
}

export function prepareFileRead(offer: Offer, ctx: SessionContext): Prepared {
  const { files } = ctx.config;
  if (!files.read) return refuse("the device's configuration switches file reading off (remoteAccess.files.read: false)");
  const asked = offer.path;
  if (!asked || !path.isAbsolute(asked)) return refuse("path: an absolute path on the device");
  let resolved: string;
  try {
    resolved = fs.realpathSync(asked);
  } catch {
    return refuse(`${asked}: no such file on the device`);
  }
  if (!inside(resolved, files.roots)) return refuse(outsideRoots(asked, resolved, files.roots));
  const stat = fs.statSync(resolved);
  if (!stat.isFile()) return refuse(`${asked} is not a regular file`);
  if (stat.size > files.maxBytes) return refuse(`${asked} is ${stat.size} bytes, more than the device's remoteAccess.files.maxBytes (${files.maxBytes})`);
  return { run: (leg) => readFile(leg, resolved) };
}

async function readFile(leg: DeviceLeg, file: string): Promise<void> {
  // the header's size and mode are the open file's (fstat), the bytes sent that file's
  const fd = fs.openSync(file, "r");
  const stat = fs.fstatSync(fd);
  const stream = fs.createReadStream(file, { fd, autoClose: true, highWaterMark: 256 * 1024 });
  leg.status({ size: stat.size, mode: stat.mode & 0o7777 });
  const hash = createHash("sha256");
  stream.on("data", (chunk) => hash.update(chunk));
  leg.once("close", () => stream.destroy());
  await pipeToLeg(stream, leg, STDOUT);
  if (leg.closed) return;
  leg.status({ sha256: hash.digest("hex") });
  leg.halfClose(STDOUT);
  leg.close(1000, "completed");
}

export function prepareFileWrite(offer: Offer, ctx: SessionContext): Prepared {
  const { files } = ctx.config;
  if (!files.write) return refuse("the device's configuration switches file writing off (remoteAccess.files.write: false)");
  const asked = offer.path;
  if (!asked || !path.isAbsolute(asked)) return refuse("path: an absolute path on the device");
  if (asked.endsWith("/")) return refuse(`${asked} names a directory: give the file's path`);
  if (offer.size !== undefined && offer.size !== null) {
    if (!Number.isSafeInteger(offer.size) || offer.size < 0) return refuse("size: a number of bytes");
    if (offer.size > files.maxBytes) return refuse(`the file is ${offer.size} bytes, more than the device's remoteAccess.files.maxBytes (${files.maxBytes})`);
  }
  if (offer.sha256 && !/^[0-9a-f]{64}$/i.test(offer.sha256)) return refuse("sha256: 64 hexadecimal digits");
  const mode = offer.mode === undefined || offer.mode === null ? null : parseMode(offer.mode);
  if (offer.mode !== undefined && offer.mode !== null && mode === null) return refuse("mode: permission bits, e.g. 0644");
  let directory: string;
  try {
    directory = fs.realpathSync(path.dirname(asked));
  } catch {
    return refuse(`${path.dirname(asked)}: no such directory on the device`);
  }
  let target = path.join(directory, path.basename(asked));
  let existing: fs.Stats | null = null;
  try {
    // an existing symlink is written through: what it points to must be inside a root too
    target = fs.realpathSync(target);
    existing = fs.statSync(target);
  } catch {
    /* a new file */
  }
  if (!inside(target, files.roots)) return refuse(outsideRoots(asked, target, files.roots));
  if (existing && !existing.isFile()) return refuse(`${asked} exists and is not a regular file`);
  const limit = offer.size ?? files.maxBytes;
  return {
    run: (leg) => writeFile(leg, target, {
      limit, size: offer.size ?? null, sha256: offer.sha256?.toLowerCase() ?? null,
      mode: mode ?? (existing ? existing.mode & 0o777 : 0o644),
      owner: existing ? { uid: existing.uid, gid: existing.gid } : null,
    }),
  };
}

interface WritePlan {
  limit: number;
  size: number | null;
  sha256: string | null;
  mode: number;
  owner: { uid: number; gid: number } | null;
}

async function writeFile(leg: DeviceLeg, target: string, plan: WritePlan): Promise<void> {
  const temporary = path.join(path.dirname(target), `.${path.basename(target)}.fleet-${randomBytes(6).toString("hex")}.part`);
  const fd = fs.openSync(temporary, "wx", 0o600);
  let open = true;
  const stream = fs.createWriteStream(temporary, { fd, autoClose: false });
  stream.on("error", () => undefined);
  const hash = createHash("sha256");
  let received = 0;
  let failure: string | null = null;
  const ended = new Promise<"uploaded" | "left">((resolve) => {
    leg.on("frame", ({ channel, payload }) => {
      if (failure) return;
      if (channel === STDIN) {
        received += payload.length;
        if (received > plan.limit) {
          failure = plan.size !== null ? `more bytes than the ${plan.size} announced` : `more than the device's remoteAccess.files.maxBytes (${plan.limit})`;
          resolve("uploaded");
          return;
        }
        hash.update(payload);
        writeFromLeg(leg, stream, payload);
      } else if (channel === CLOSE && payload[0] === STDIN) resolve("uploaded");
    });
    if (leg.closed) resolve("left");
    else leg.once("close", () => resolve("left"));
  });
  let renamed = false;
  try {
    const how = await ended;
    if (how === "left") return;
    await new Promise<void>((resolve, reject) => stream.end((error?: Error | null) => (error ? reject(error) : resolve())));
    const sha256 = hash.digest("hex");
    if (!failure && plan.size !== null && received !== plan.size) failure = `${received} bytes arrived, ${plan.size} were announced`;
    if (!failure && plan.sha256 && sha256 !== plan.sha256) failure = `the SHA-256 of what arrived is ${sha256}, ${plan.sha256} was announced`;
    if (failure) {
      leg.status({ error: `${failure}; ${target} is unchanged` });
      leg.close(1000, "failed");
      return;
    }
    fs.fchmodSync(fd, plan.mode);
    if (plan.owner) fs.fchownSync(fd, plan.owner.uid, plan.owner.gid);
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    open = false;
    await fsp.rename(temporary, target);
    renamed = true;
    await syncDirectory(path.dirname(target));
    leg.status({ size: received, sha256 });
    leg.close(1000, "completed");
  } catch (error) {
    leg.status({ error: `${target} could not be written (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})` });
    leg.close(1000, "failed");
  } finally {
    if (open) fs.closeSync(fd);
    if (!renamed) await fsp.rm(temporary, { force: true });
  }
}

async function syncDirectory(directory: string) {
  const handle = await fsp.open(directory, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
