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

export interface FirstStartFacts {
  /** the console's address */
  where: string;
  adminEmail: string | undefined;
  generatedPassword?: string | null;
  generatedApiKey?: string | null;
}

/**
 * The first-start block. `showGenerated` false leaves the generated password and API key out:
 * what is printed where no terminal is (journald, a container's log, a file), when the kept
 * file holds them.
 */
export function firstStartBlock(facts: FirstStartFacts, showGenerated: boolean): string[] {
  const secret = (label: string, value: string | null | undefined, setting: string) =>
    !value ? `${label}from ${setting}`
      : showGenerated ? `${label}${value}   (generated; set ${setting} to choose it)`
      : `${label}(generated; in the file below, not printed without a terminal; set ${setting} to choose it)`;
  return [
    "First start: created organization 'default' and its Super Admin.",
    `  web console:   ${facts.where}/   (sign in with the e-mail and password below)`,
    `  admin e-mail:  ${facts.adminEmail}`,
    secret("  password:      ", facts.generatedPassword, "BOOTSTRAP_ADMIN_PASSWORD"),
    secret("  API key:       ", facts.generatedApiKey, "BOOTSTRAP_API_KEY"),
    `  API docs:      ${facts.where}/api/v1/docs`,
  ];
}
