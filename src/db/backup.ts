// Backups of the embedded database (PGlite), taken while the service runs.
//
// PGlite is PostgreSQL compiled to WebAssembly inside the service's process: one process, one
// connection, no postmaster and no lock on its files. A second process opening the same data
// directory would run a second PostgreSQL over the same files and corrupt them; copying the
// files while the service writes gives a torn copy. So the process that has the database open
// writes the dump: PGlite's dumpDataDir, taken between two statements (it holds PGlite's query
// lock), is the image a crash at that instant would leave, which PostgreSQL's recovery brings to
// the last commit when it is loaded.
//
// The service asks for it over a Unix socket in DATA_DIR (mode 0600, so only the service's
// user, who can read the files anyway, may ask). No HTTP route: nothing on the network can
// pull the database, and the socket also marks DATA_DIR as in use: `npm start`, db:backup,
// db:restore and db:move refuse a DATA_DIR another process holds.
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import type { PGlite } from "@electric-sql/pglite";

export const BACKUP_SOCKET = "backup.sock";

export class DataDirInUseError extends Error {}

/** Unix socket paths are limited to 107 bytes (Linux). */
const MAX_SOCKET_PATH = 100;

/** The path to listen on / connect to: relative to the working directory when that is shorter. null: too long either way. */
function socketPath(dataDir: string): string | null {
  const absolute = path.resolve(dataDir, BACKUP_SOCKET);
  const relative = path.relative(process.cwd(), absolute);
  const shorter = relative.length < absolute.length ? relative : absolute;
  return Buffer.byteLength(shorter) <= MAX_SOCKET_PATH ? shorter : null;
}

const TOO_LONG = (dataDir: string) =>
  `the path of ${path.resolve(dataDir)} is too long for its socket (${BACKUP_SOCKET}, at most ${MAX_SOCKET_PATH} bytes): run from a folder near DATA_DIR, or use a shorter DATA_DIR`;

function connect(dataDir: string): Promise<net.Socket | null> {
  const file = socketPath(dataDir);
  if (!file) return Promise.reject(new Error(TOO_LONG(dataDir)));
  return new Promise((resolve, reject) => {
    const socket = net.connect(file);
    socket.once("connect", () => resolve(socket));
    socket.once("error", (err: NodeJS.ErrnoException) => {
      // nobody listens (no file, or a file left by a process that died): DATA_DIR is free
      if (err.code === "ENOENT" || err.code === "ECONNREFUSED") resolve(null);
      else reject(err);
    });
  });
}

export interface DataDirHold {
  /** from now on, answer backup requests with dumps of `pglite` */
  serve(pglite: PGlite): void;
  close(): Promise<void>;
}

/**
 * Marks DATA_DIR as used by this process (listens on DATA_DIR/backup.sock) and answers backup
 * requests once `serve` names the database. Throws DataDirInUseError when another process holds it.
 */
export async function holdDataDir(dataDir: string, options: { onError?: (message: string) => void; required?: boolean } = {}): Promise<DataDirHold> {
  const onError = options.onError ?? (() => undefined);
  fs.mkdirSync(path.resolve(dataDir), { recursive: true });
  const file = socketPath(dataDir);
  if (!file) {
    if (options.required) throw new Error(TOO_LONG(dataDir));
    // The service still starts (as it did before this guard existed); the commands refuse such a DATA_DIR.
    onError(`${TOO_LONG(dataDir)}; db:backup cannot reach this service and nothing guards DATA_DIR against a second process`);
    return { serve: () => undefined, close: async () => undefined };
  }
  const existing = await connect(dataDir);
  if (existing) {
    existing.destroy();
    throw new DataDirInUseError(
      `another process uses the embedded database in ${path.resolve(dataDir)} (a running service, or db:backup/db:restore/db:move): PGlite serves one process at a time`,
    );
  }
  fs.rmSync(file, { force: true }); // left by a process that was killed
  let pglite: PGlite | null = null;
  const server = net.createServer((socket) => {
    socket.on("error", () => undefined);
    socket.once("data", () => {
      if (!pglite) {
        socket.end(JSON.stringify({ error: "the database is not open yet; try again in a moment" }) + "\n");
        return;
      }
      const started = Date.now();
      dumpDatabase(pglite).then(
        (dump) => {
          socket.write(JSON.stringify({ bytes: dump.length, ms: Date.now() - started }) + "\n");
          socket.end(dump);
        },
        (err: Error) => {
          onError(err.message);
          socket.end(JSON.stringify({ error: `the dump failed: ${err.message}` }) + "\n");
        },
      );
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(file, () => resolve());
  });
  fs.chmodSync(file, 0o600);
  return {
    serve: (db) => {
      pglite = db;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A gzipped tar of the data directory, as PGlite's loadDataDir takes it back. */
export async function dumpDatabase(pglite: PGlite): Promise<Buffer> {
  // Flushes the buffers first: recovery at load has less WAL to replay.
  await pglite.exec("CHECKPOINT");
  const blob = await pglite.dumpDataDir("gzip");
  return Buffer.from(await blob.arrayBuffer());
}

/**
 * Asks the process holding DATA_DIR for a dump. null: no process holds it (the caller may open
 * the database itself).
 */
export async function requestDump(dataDir: string, timeoutMs = 600_000): Promise<{ dump: Buffer; ms: number } | null> {
  const socket = await connect(dataDir);
  if (!socket) return null;
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(new Error(`no dump within ${timeoutMs / 1000} s`)), timeoutMs);
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.once("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    socket.once("end", () => {
      clearTimeout(timer);
      const all = Buffer.concat(chunks);
      const nl = all.indexOf(10);
      if (nl < 0) return reject(new Error("the service closed the connection without an answer"));
      const head = JSON.parse(all.subarray(0, nl).toString("utf8")) as { bytes?: number; ms?: number; error?: string };
      if (head.error) return reject(new Error(head.error));
      const dump = all.subarray(nl + 1);
      if (dump.length !== head.bytes) return reject(new Error(`the dump was cut off: ${dump.length} of ${head.bytes} bytes`));
      resolve({ dump, ms: head.ms ?? 0 });
    });
    socket.write("dump\n");
  });
}
