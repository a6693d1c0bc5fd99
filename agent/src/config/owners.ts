// "user:group" of a configuration file to numeric ids, from the machine's own /etc/passwd and
// /etc/group (Node has no getpwnam; the agent carries no native module). Names are resolved
// before anything is written, so an unknown one fails the revision with nothing changed.
import fs from "node:fs";

function table(file: string): Map<string, { id: number; gid?: number }> {
  const map = new Map<string, { id: number; gid?: number }>();
  let text = "";
  try {
    text = fs.readFileSync(file, "utf8");
  } catch {
    return map;
  }
  for (const line of text.split("\n")) {
    const [name, , id, gid] = line.split(":");
    if (name && id !== undefined && /^\d+$/.test(id)) map.set(name, { id: Number(id), gid: gid && /^\d+$/.test(gid) ? Number(gid) : undefined });
  }
  return map;
}

export interface OwnerFiles {
  passwd: string;
  group: string;
}

const SYSTEM: OwnerFiles = { passwd: "/etc/passwd", group: "/etc/group" };

/** Numeric ids for `owner` ("user", "user:group", "1000:1000"); absent: the agent's own. Throws naming the unknown name. */
export function resolveOwner(owner: string | undefined, files: OwnerFiles = SYSTEM): { uid: number; gid: number } {
  const self = { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
  if (owner === undefined || owner === "") return self;
  const [user, group] = owner.split(":", 2);
  let uid: number;
  let gid: number | undefined;
  if (/^\d+$/.test(user)) uid = Number(user);
  else {
    const entry = table(files.passwd).get(user);
    if (!entry) throw new Error(`owner ${owner}: no user ${user} on this device`);
    uid = entry.id;
    gid = entry.gid;
  }
  if (group !== undefined && group !== "") {
    if (/^\d+$/.test(group)) gid = Number(group);
    else {
      const entry = table(files.group).get(group);
      if (!entry) throw new Error(`owner ${owner}: no group ${group} on this device`);
      gid = entry.id;
    }
  }
  return { uid, gid: gid ?? self.gid };
}
