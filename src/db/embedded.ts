// What db:backup, db:restore and db:move share: the embedded database of a DATA_DIR opened by
// a command while no service runs on it (held meanwhile, src/db/backup.ts), and their output.
import fs from "node:fs";
import path from "node:path";
import { openPGlite, type OpenedDatabase } from "./adapters.js";
import { holdDataDir, type DataDirHold } from "./backup.js";

/** PGlite keeps its files in DATA_DIR/pgdata. */
export const pgdataOf = (dataDir: string) => path.resolve(dataDir, "pgdata");

export function hasDatabase(dataDir: string): boolean {
  const dir = pgdataOf(dataDir);
  return fs.existsSync(dir) && fs.readdirSync(dir).length > 0;
}

/** Opens the embedded database of `dataDir` while holding it; `loadDataDir` restores a dump into an empty one. */
export async function openHeld(dataDir: string, loadDataDir?: Blob): Promise<{ opened: OpenedDatabase; hold: DataDirHold; close(): Promise<void> }> {
  const hold = await holdDataDir(dataDir, { required: true });
  try {
    const opened = await openPGlite(dataDir, loadDataDir);
    hold.serve(opened.pglite!);
    return { opened, hold, close: async () => {
      await opened.raw.close();
      await hold.close();
    } };
  } catch (err) {
    await hold.close();
    throw err;
  }
}

export const megabytes = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

/** The DATA_DIR a command works on: --data-dir, else the environment's, else the service's default. */
export const dataDirFrom = (flag: string | undefined) => flag ?? (process.env.DATA_DIR || "./data");

/** Runs a command's main: known failures as one line and exit 1, usage errors with exit 2. */
export function runCommand(usage: string, main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (err: Error & { code?: string }) => {
      console.error(err.message);
      if (err.code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" || err.code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE" || err.message === usage) {
        console.error(usage);
        process.exit(2);
      }
      process.exit(1);
    },
  );
}
