// One holder at a time across processes (several agents generating migrations in one checkout,
// two test files building the same container image): the lock is a folder, made atomically by
// mkdir, that names its holder's pid. A lock whose holder is gone (a killed run left it) is
// taken over, so a kill -9 in one run does not make every later one wait out its time and fail.
import fs from "node:fs";
import path from "node:path";

/** Waits for the lock (at most `timeoutMs`), takes it, and answers its release. */
export async function takeDirLock(lock: string, timeoutMs: number): Promise<() => void> {
  const holder = path.join(lock, "pid");
  for (let waited = 0; ; waited += 500) {
    try {
      fs.mkdirSync(lock);
      fs.writeFileSync(holder, String(process.pid));
      return () => fs.rmSync(lock, { recursive: true, force: true });
    } catch {
      if (lockHolderGone(lock, holder)) {
        fs.rmSync(lock, { recursive: true, force: true });
        continue;
      }
      if (waited > timeoutMs) throw new Error(`could not take ${lock} in ${Math.round(timeoutMs / 1000)} s; remove it if nothing holds it`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/** Runs `work` holding the lock. */
export async function withDirLock<T>(lock: string, timeoutMs: number, work: () => Promise<T>): Promise<T> {
  const release = await takeDirLock(lock, timeoutMs);
  try {
    return await work();
  } finally {
    release();
  }
}

/** The lock's holder is no longer running (or never wrote its pid and the lock is over a minute old). */
function lockHolderGone(lock: string, holder: string): boolean {
  let pid: number;
  try {
    pid = Number(fs.readFileSync(holder, "utf8"));
  } catch {
    const made = fs.statSync(lock, { throwIfNoEntry: false });
    return made !== undefined && Date.now() - made.mtimeMs > 60_000;
  }
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "ESRCH";
  }
}
