// The start-up check that ENCRYPTION_KEY (or DATA_DIR/encryption.key) is the key this
// database's secrets were sealed with. A database restored or moved without its key would
// otherwise start, and fail much later: at the next registry sync, CA signature or e-mail.
//
// A canary (one row of "EncryptionKeyCheck") is sealed at the first start and opened at every
// start. A database that has sealed values but no canary yet (made before the check existed)
// gets one only after one of its sealed values opens with the current key.
import type { SecretBox } from "../lib/crypto.js";
import type { RawDatabase } from "./adapters.js";

const CANARY = "fleet-manager encryption key check";

/** Where sealed values live: each query answers at most one of them. */
const SEALED_VALUES = [
  `SELECT "credentialSealed" AS v FROM "GitRegistry" WHERE "credentialSealed" IS NOT NULL LIMIT 1`,
  `SELECT "credentialSealed" AS v FROM "OciRegistry" WHERE "credentialSealed" IS NOT NULL LIMIT 1`,
  `SELECT "credentialSealed" AS v FROM "GlobalOciRegistry" WHERE "credentialSealed" IS NOT NULL LIMIT 1`,
  `SELECT "privateKeyEncrypted" AS v FROM "CaCertificate" WHERE "privateKeyEncrypted" IS NOT NULL LIMIT 1`,
  `SELECT "secretEncrypted" AS v FROM "NotificationTarget" WHERE "secretEncrypted" IS NOT NULL LIMIT 1`,
  `SELECT "bodySealed" AS v FROM "MailOutbox" LIMIT 1`,
];

export class EncryptionKeyError extends Error {}

function wrongKey(what: string, keySource: string): EncryptionKeyError {
  return new EncryptionKeyError(
    `the encryption key (${keySource}) does not open this database's secrets: ${what}. Start with the key the database was made with: ` +
      "ENCRYPTION_KEY, or the file encryption.key of the DATA_DIR it came from (docs/operations.md). The database was not changed.",
  );
}

function opens(secrets: SecretBox, sealed: string, expected?: string): boolean {
  try {
    const plain = secrets.decrypt(sealed);
    return expected === undefined || plain === expected;
  } catch {
    return false;
  }
}

/**
 * Throws EncryptionKeyError when the key cannot open the database's sealed values.
 * `keySource`: where the key came from, for the message (ENCRYPTION_KEY or the key file).
 */
export async function checkEncryptionKey(db: RawDatabase, secrets: SecretBox, keySource: string): Promise<"verified" | "created"> {
  const [canary] = await db.query<{ sealed: string; createdAt: Date }>(`SELECT "sealed", "createdAt" FROM "EncryptionKeyCheck" WHERE "id" = 1`);
  if (canary) {
    if (opens(secrets, canary.sealed, CANARY)) return "verified";
    throw wrongKey(`the check value sealed at the first start, ${new Date(canary.createdAt).toISOString()}, does not open`, keySource);
  }
  for (const sql of SEALED_VALUES) {
    const [row] = await db.query<{ v: string }>(sql);
    if (!row) continue;
    if (!opens(secrets, row.v)) throw wrongKey(`a stored secret does not open`, keySource);
    break; // one is enough: every value was sealed with the same key
  }
  // Two processes starting at once (PostgreSQL): the first row stays, the other is checked.
  await db.query(`INSERT INTO "EncryptionKeyCheck" ("id", "sealed") VALUES (1, $1) ON CONFLICT ("id") DO NOTHING`, [secrets.encrypt(CANARY)]);
  const [stored] = await db.query<{ sealed: string }>(`SELECT "sealed" FROM "EncryptionKeyCheck" WHERE "id" = 1`);
  if (!stored || !opens(secrets, stored.sealed, CANARY)) throw wrongKey("another process sealed the check value with another key at the same time", keySource);
  return "created";
}
