// The start-up key check (src/db/key-check.ts) on a database made before it existed: no check
// value yet, but a CA's private key sealed with the installation's key. Another key is refused
// without writing anything; the right key gets the check value, which every later start opens.
// (The starts of real processes with a wrong key: backup-restore.test.ts, move-to-postgres.test.ts.)
import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../../support/harness.js";
import { ensureCa } from "../agent/fleet-support.js";
import { checkEncryptionKey } from "../../../src/db/key-check.js";
import { SecretBox } from "../../../src/lib/crypto.js";

describe("the encryption key check at start", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h?.close());

  it("refuses another key by a sealed secret, then seals its check value with the right key and opens it at every start", async () => {
    const raw = h.services.database.opened.raw;
    const stored = () => h.services.prisma.encryptionKeyCheck.count();
    await ensureCa(h, h.adminKey); // a private key sealed with the harness's key
    const other = new SecretBox(crypto.randomBytes(32));

    await expect(checkEncryptionKey(raw, other, "ENCRYPTION_KEY")).rejects.toThrow(
      "the encryption key (ENCRYPTION_KEY) does not open this database's secrets: a stored secret does not open",
    );
    expect(await stored()).toBe(0);

    expect(await checkEncryptionKey(raw, h.services.secrets, "ENCRYPTION_KEY")).toBe("created");
    expect(await stored()).toBe(1);
    expect(await checkEncryptionKey(raw, h.services.secrets, "ENCRYPTION_KEY")).toBe("verified");
    await expect(checkEncryptionKey(raw, other, "/srv/fleet/data/encryption.key")).rejects.toThrow(
      /^the encryption key \(\/srv\/fleet\/data\/encryption.key\) does not open this database's secrets: the check value sealed at the first start, \d{4}-.*, does not open/,
    );
  });
});
