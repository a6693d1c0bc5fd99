// The first-start block (the Super Admin's generated password and platform API key, shown
// once) is also kept in DATA_DIR/first-start.txt, readable by the service's user only (mode
// 0600), so that it stays findable after the terminal scrolled on. It is deleted when that
// admin changes their password (profile router), after which it is of no use.
import fs from "node:fs";
import path from "node:path";

export const FIRST_START_FILE = "first-start.txt";

export function firstStartPath(dataDir: string): string {
  return path.join(dataDir, FIRST_START_FILE);
}

/** The line that says whose file it is; `forgetFirstStart` finds the admin's id in it. */
const ownerLine = (adminUserId: string) => `# Deleted when this admin (user ${adminUserId}) changes the password (console: Profile).`;

/** Writes the block, mode 0600 (also when the file was there); returns the file's path. */
export function keepFirstStart(dataDir: string, block: string, adminUserId: string): string {
  const file = firstStartPath(dataDir);
  fs.mkdirSync(dataDir, { recursive: true });
  fs.writeFileSync(file, `${block.trim()}\n\n${ownerLine(adminUserId)}\n`, { mode: 0o600 });
  fs.chmodSync(file, 0o600);
  return file;
}

/** Deletes the kept block if it is the one of `userId` (who just changed their password). */
export function forgetFirstStart(dataDir: string, userId: string): boolean {
  const file = firstStartPath(dataDir);
  try {
    if (!fs.readFileSync(file, "utf8").includes(ownerLine(userId))) return false;
    fs.rmSync(file, { force: true });
    return true;
  } catch {
    return false; // no file: nothing to forget
  }
}

/**
 * The first-start block with its generated password and API key left out: what is printed where
 * no terminal is (journald, a container's log, a file), when the kept file holds them.
 */
export function withoutGeneratedSecrets(block: string[]): string[] {
  return block.map((line) => {
    const generated = /^( {2}(?:password|API key): +)\S+ +\(generated; (.*)\)$/.exec(line);
    return generated ? `${generated[1]}(generated; in the file below, not printed without a terminal; ${generated[2]})` : line;
  });
}
