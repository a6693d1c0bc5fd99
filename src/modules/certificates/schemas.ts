// Organization-wide views of device certificates: filters, the expiring window and statistics.
import { z } from "zod";
import { pageOutput, pagingInput } from "../../lib/paging.js";
import { certificateStatusFilter, deviceCertificateOutput } from "../devices/certificates/schemas.js";

export const DEFAULT_EXPIRING_DAYS = 30;
const days = z.coerce.number().int().min(1).max(3650).default(DEFAULT_EXPIRING_DAYS);

export const listCertificatesInput = z.object({
  deviceId: z.string().uuid().optional(),
  status: certificateStatusFilter,
  caId: z.string().uuid().optional(),
  ...pagingInput,
});

export const expiringInput = z.object({
  days: days.describe(`window in days from now (default ${DEFAULT_EXPIRING_DAYS})`),
  ...pagingInput,
});

/** An expiring certificate names its device, so that a list of them says whom to act on. */
export const expiringCertificatePageOutput = pageOutput(deviceCertificateOutput.extend({
  deviceName: z.string().nullable().describe("the device's name; null once the device was deleted"),
}));

export const statsInput = z.object({
  days: days.describe(`what counts as expiring soon, in days from now (default ${DEFAULT_EXPIRING_DAYS})`),
});

const counts = {
  total: z.number().int(),
  valid: z.number().int().describe("not revoked and not expired (includes expiringSoon)"),
  expiringSoon: z.number().int().describe("valid, expiring within `days`, and not yet renewed"),
  expired: z.number().int().describe("not revoked and past notAfter"),
  revoked: z.number().int(),
};

export const statsOutput = z.object({
  ...counts,
  expiringWithinDays: z.number().int(),
  byCa: z.array(z.object({
    caId: z.string().uuid().nullable().describe("null for certificates whose CA was deleted"),
    name: z.string().nullable(),
    isDefault: z.boolean(),
    ...counts,
  })),
});
export type StatsDto = z.infer<typeof statsOutput>;
