// "Not now": an application on the device defers disruptive actions by writing a lease file
// into the lease directory, `<name>.json` = `{ "until": "2026-12-07T12:00:00Z", "reason": "carrying a load" }`
// (written atomically: to a temporary name, then renamed). A lease always ends: at its
// `until`, and at the latest `leaseMaxSeconds` after the file was last written, so an
// application that crashed while holding one cannot block the device for long. A file that
// cannot be read as a lease holds nothing.
import fsp from "node:fs/promises";
import path from "node:path";

export interface Lease {
  /** the file's name without .json: the application that holds it */
  name: string;
  until: Date;
  reason: string | null;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

export async function activeLeases(dir: string, maxSeconds: number, now = Date.now()): Promise<Lease[]> {
  let names: string[];
  try {
    names = await fsp.readdir(dir);
  } catch {
    return [];
  }
  const leases: Lease[] = [];
  for (const file of names) {
    if (!file.endsWith(".json") || !NAME.test(file.slice(0, -5))) continue;
    try {
      const full = path.join(dir, file);
      const [text, stat] = await Promise.all([fsp.readFile(full, "utf8"), fsp.stat(full)]);
      const body = JSON.parse(text) as { until?: unknown; reason?: unknown };
      const asked = typeof body.until === "string" ? Date.parse(body.until) : NaN;
      if (!Number.isFinite(asked)) continue;
      const until = Math.min(asked, stat.mtimeMs + maxSeconds * 1000);
      if (until <= now) continue;
      leases.push({ name: file.slice(0, -5), until: new Date(until), reason: typeof body.reason === "string" ? body.reason.slice(0, 200) : null });
    } catch {
      // not a lease (half written by a writer that does not rename, not JSON): holds nothing
    }
  }
  return leases.sort((a, b) => b.until.getTime() - a.until.getTime());
}

/**
 * Who holds the device now and until when (the latest end), and why, or null: what deferrable
 * actions (runner.ts) and installs (core/deployments.ts holdInstalls) wait for.
 */
export async function leaseHold(settings: { leaseDir: string; leaseMaxSeconds: number }): Promise<{ by: string; until: string; reason: string } | null> {
  const leases = await activeLeases(settings.leaseDir, settings.leaseMaxSeconds);
  if (!leases.length) return null;
  return {
    by: leases.map((l) => l.name).join(", ").slice(0, 200),
    until: leases[0].until.toISOString(),
    reason: leases.map((l) => l.reason).filter(Boolean).join("; "),
  };
}
