// fleet cp DEVICE:/path LOCAL and fleet cp LOCAL DEVICE:/dir/: one file each way through a
// file-read or file-write session, its size, mode and SHA-256 checked at the end. A download
// is written to a temporary file beside the target and renamed over it only once all three
// match, so a failed copy never leaves half a file under the target's name.
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { Command } from "commander";
import { CliError, EXIT } from "../errors.js";
import type { Io } from "../main.js";
import { CHANNEL } from "../remote/framing.js";
import { endedSession, endReasonText, openSession, openSessionStream, readStatus, type Opened } from "../remote/session.js";
import { connect, idByName, type Globals } from "../runtime.js";
import type { ApiClient } from "../client.js";

export interface Endpoint {
  device?: string;
  path: string;
}

/** DEVICE:/absolute/path is the device's; anything else (./a:b, /tmp/x, name) is local. */
export function parseEndpoint(text: string): Endpoint {
  const m = /^([^/:][^:]*):(\/.*)$/.exec(text);
  return m ? { device: m[1], path: m[2] } : { path: text };
}

export async function cp(args: unknown[], globals: Globals, io: Io, cmd: Command): Promise<number> {
  const opts = cmd.opts<{ reason?: string }>();
  const from = parseEndpoint(String(args[0]));
  const to = parseEndpoint(String(args[1]));
  if (!!from.device === !!to.device) {
    throw new CliError(EXIT.usage, "fleet cp copies between a device and this machine: DEVICE:/path LOCAL, or LOCAL DEVICE:/path (a path on the device is absolute)");
  }
  const { client } = await connect(globals, io);
  const device = (from.device ?? to.device)!;
  const deviceId = await idByName(client, "/devices", device, "device");
  if (from.device) await download(client, deviceId, from.path, to.path, opts.reason, io);
  else await upload(client, deviceId, from.path, to.path, opts.reason, io);
  return EXIT.ok;
}

/** A session's failure as a CliError: the device's refusal, or why the session ended. */
async function failure(client: ApiClient, opened: Opened, refusal: string | undefined, what: string): Promise<CliError> {
  if (refusal !== undefined) return new CliError(EXIT.error, `${what}: ${endReasonText("device-refused", refusal)}`);
  const session = await endedSession(client, opened.session.id);
  return new CliError(EXIT.error, `${what}: ${endReasonText(session?.endReason)}`);
}

const modeText = (mode: number) => `0${(mode & 0o7777).toString(8)}`;

function modeOf(value: unknown): number | undefined {
  if (typeof value === "number") return value;
  if (typeof value === "string" && /^0?[0-7]{3,4}$/.test(value)) return parseInt(value, 8);
  return undefined;
}

async function download(client: ApiClient, deviceId: string, remotePath: string, localPath: string, reason: string | undefined, io: Io): Promise<void> {
  const target = fs.existsSync(localPath) && fs.statSync(localPath).isDirectory() || /[/\\]$/.test(localPath)
    ? path.join(localPath, path.posix.basename(remotePath))
    : localPath;
  const opened = await openSession(client, { deviceId, kind: "file-read", path: remotePath, reason });
  const temp = path.join(path.dirname(target), `.${path.basename(target)}.fleet-${randomBytes(4).toString("hex")}.part`);
  const out = fs.createWriteStream(temp, { flags: "wx", mode: 0o600 });
  await new Promise<void>((resolve, reject) => {
    out.once("open", () => resolve());
    out.once("error", (err) => reject(new CliError(EXIT.error, `cannot write ${target}: ${(err as NodeJS.ErrnoException).code ?? err.message}`)));
  });
  const hash = createHash("sha256");
  let header: { size: number; mode?: number; sha256?: string } | undefined;
  let trailerSha: string | undefined;
  let refusal: string | undefined;
  let received = 0;
  try {
    const stream = await openSessionStream(client, opened, (frame) => {
      if (frame.channel === CHANNEL.stdout) {
        received += frame.payload.length;
        hash.update(frame.payload);
        if (!out.write(frame.payload)) {
          stream.pauseReading();
          out.once("drain", () => stream.resumeReading());
        }
        return;
      }
      const status = readStatus(frame);
      if (!status) return;
      if (status.error !== undefined) refusal = status.error;
      else if (!header && typeof status.value.size === "number") header = { size: status.value.size, mode: modeOf(status.value.mode), sha256: status.value.sha256 as string | undefined };
      else if (typeof status.value.sha256 === "string") {
        trailerSha = status.value.sha256;
        stream.closeSoon();
      }
    });
    await stream.closed;
    await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
    if (!header) throw await failure(client, opened, refusal, `cannot copy ${remotePath}`);
    const sha256 = hash.digest("hex");
    const expected = trailerSha ?? header.sha256;
    const problems: string[] = [];
    if (received !== header.size) problems.push(`size: ${received} bytes arrived, the device announced ${header.size}`);
    if (!expected) problems.push("the device sent no SHA-256 to check against");
    else if (expected !== sha256) problems.push(`SHA-256: ${sha256} arrived, the device's is ${expected}`);
    if (problems.length) {
      const why = refusal !== undefined || received < header.size ? ` (${(await failure(client, opened, refusal, "the copy stopped")).message})` : "";
      throw new CliError(EXIT.error, `the copy of ${remotePath} does not match, nothing written to ${target}: ${problems.join("; ")}${why}`);
    }
    if (header.mode !== undefined) fs.chmodSync(temp, header.mode & 0o7777);
    fs.renameSync(temp, target);
    io.stderr.write(`${remotePath} -> ${target}: ${received} bytes, mode ${header.mode !== undefined ? modeText(header.mode) : "unknown"}, sha256 ${sha256}\n`);
  } finally {
    out.destroy();
    fs.rmSync(temp, { force: true });
  }
}

async function sha256OfFile(file: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of fs.createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

async function upload(client: ApiClient, deviceId: string, localPath: string, remotePath: string, reason: string | undefined, io: Io): Promise<void> {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(localPath);
  } catch (err) {
    throw new CliError(EXIT.usage, `cannot read ${localPath}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  if (!stat.isFile()) throw new CliError(EXIT.usage, `${localPath} is not a file: fleet cp copies one file`);
  const destination = remotePath.endsWith("/") ? remotePath + path.basename(localPath) : remotePath;
  const sha256 = await sha256OfFile(localPath);
  const mode = stat.mode & 0o777;
  const opened = await openSession(client, { deviceId, kind: "file-write", path: destination, size: stat.size, mode, sha256, reason });
  let answer: { size?: number; sha256?: string } | undefined;
  let refusal: string | undefined;
  const stream = await openSessionStream(client, opened, (frame) => {
    const status = readStatus(frame);
    if (!status) return;
    if (status.error !== undefined) refusal = status.error;
    else if (typeof status.value.sha256 === "string") {
      answer = { size: status.value.size as number, sha256: status.value.sha256 };
      stream.closeSoon();
    }
  });
  const file = fs.createReadStream(localPath, { highWaterMark: 256 * 1024 });
  void (async () => {
    for await (const chunk of file) {
      if (!stream.open || refusal !== undefined) break;
      if (!stream.send(CHANNEL.stdin, chunk as Buffer)) await stream.drained();
    }
    if (stream.open && refusal === undefined) stream.halfClose(CHANNEL.stdin);
  })().catch(() => stream.close(1000));
  await stream.closed;
  file.destroy();
  if (!answer) throw await failure(client, opened, refusal, `cannot copy ${localPath} to ${destination}`);
  if (answer.size !== stat.size || answer.sha256 !== sha256) {
    throw new CliError(EXIT.error, `the device's copy of ${localPath} at ${destination} does not match: ${answer.size} bytes with SHA-256 ${answer.sha256}, sent ${stat.size} bytes with SHA-256 ${sha256}`);
  }
  io.stderr.write(`${localPath} -> ${destination}: ${stat.size} bytes, mode ${modeText(mode)}, sha256 ${sha256}\n`);
}
