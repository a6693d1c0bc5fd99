// Keys that must survive restarts but need not be configured: taken from the environment
// when given, otherwise generated once into the data directory with mode 0600.
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";

export function parseKey(value: string, name: string): Buffer {
  const key = /^[0-9a-f]{64}$/i.test(value) ? Buffer.from(value, "hex") : Buffer.from(value, "base64");
  if (key.length !== 32) throw new Error(`${name} must be 32 bytes, as 64 hex characters or base64`);
  return key;
}

export function loadOrCreateKeyFile(dataDir: string, fileName: string): Buffer {
  const file = path.resolve(dataDir, fileName);
  if (fs.existsSync(file)) return parseKey(fs.readFileSync(file, "utf8").trim(), file);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const key = crypto.randomBytes(32);
  // "wx": never overwrite a key another process wrote meanwhile.
  try {
    fs.writeFileSync(file, key.toString("hex") + "\n", { mode: 0o600, flag: "wx" });
    return key;
  } catch {
    return parseKey(fs.readFileSync(file, "utf8").trim(), file);
  }
}
