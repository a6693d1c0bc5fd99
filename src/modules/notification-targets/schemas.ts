// Notification targets: where alert notifications go. Webhook (JSON POST signed with
// HMAC-SHA256 in X-Signature), Slack-compatible incoming webhook, or e-mail over SMTP.
import { z } from "zod";
import { pagingInput } from "../../lib/paging.js";
import { ownerMark, ownerMarkOutput, type OwnerMark } from "../../lib/owner-mark.js";

export const TARGET_TYPES = ["webhook", "slack", "email"] as const;
export type TargetType = (typeof TARGET_TYPES)[number];

const bodyBoolean = () => z.boolean().pipe(z.boolean());
const name = z.string().trim().min(1).max(100);
const url = z.string().url().max(2000).describe("http(s) URL; checked against the outbound address policy");
const secret = z.string().min(16).max(256).describe("webhook signing secret (at least 16 characters); generated when absent");
const recipients = z.array(z.email().max(254)).min(1).max(20);

/** Which fields each type needs and which it must not have. */
function checkFields(value: { type?: TargetType; url?: string; secret?: string; recipients?: string[] }, ctx: z.RefinementCtx, creating: boolean) {
  const type = value.type;
  if (!type) return;
  const needsUrl = type === "webhook" || type === "slack";
  if (needsUrl && creating && !value.url) ctx.addIssue({ code: "custom", path: ["url"], message: `a ${type} target needs a url` });
  if (!needsUrl && value.url !== undefined) ctx.addIssue({ code: "custom", path: ["url"], message: "an email target has no url" });
  if (type === "email" && creating && !value.recipients) ctx.addIssue({ code: "custom", path: ["recipients"], message: "an email target needs recipients" });
  if (type !== "email" && value.recipients !== undefined) ctx.addIssue({ code: "custom", path: ["recipients"], message: `a ${type} target has no recipients` });
  if (type !== "webhook" && value.secret !== undefined) ctx.addIssue({ code: "custom", path: ["secret"], message: "only webhook targets have a signing secret" });
}

export const createTargetInput = z
  .object({
    name,
    type: z.enum(TARGET_TYPES),
    url: url.optional(),
    secret: secret.optional(),
    recipients: recipients.optional(),
    enabled: bodyBoolean().default(true),
  })
  .superRefine((v, ctx) => checkFields(v, ctx, true));
export type CreateTargetInput = z.infer<typeof createTargetInput>;

/** The type cannot change; a new secret replaces the old one. */
export const updateTargetInput = z.object({
  id: z.uuid(),
  name: name.optional(),
  url: url.optional(),
  secret: secret.optional(),
  recipients: recipients.optional(),
  enabled: bodyBoolean().optional(),
});
export type UpdateTargetInput = z.infer<typeof updateTargetInput>;

export const listTargetsInput = z.object({
  type: z.enum(TARGET_TYPES).optional(),
  ...pagingInput,
});

export const targetOutput = z.object({
  id: z.string(),
  name: z.string(),
  type: z.enum(TARGET_TYPES),
  /** masked: origin and path of a webhook (query string hidden), origin only for Slack */
  url: z.string().nullable(),
  recipients: z.array(z.string()),
  /** webhook: a signing secret is set (never returned after creation) */
  hasSecret: z.boolean(),
  enabled: z.boolean(),
  ...ownerMarkOutput,
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type TargetDto = z.infer<typeof targetOutput>;

/** The creation answer of a webhook whose secret was generated: the secret, shown once. */
export const createdTargetOutput = targetOutput.extend({ secret: z.string().optional() });

export const targetPageOutput = z.object({ items: z.array(targetOutput), total: z.number().int(), hasMore: z.boolean() });

export interface TargetRow extends OwnerMark {
  id: string;
  name: string;
  type: string;
  url: string | null;
  recipients: string[];
  secretEncrypted: string | null;
  enabled: boolean;
  createdAt: Date;
  updatedAt: Date;
}

/** What reads show of a URL: never credentials, query strings or (for Slack) the secret path. */
export function maskUrl(raw: string, type: string): string {
  try {
    const u = new URL(raw);
    if (type === "slack") return `${u.origin}/…`;
    return `${u.origin}${u.pathname}${u.search ? "?…" : ""}`;
  } catch {
    return "…";
  }
}

export function toTargetDto(row: TargetRow, openUrl: (sealed: string) => string): TargetDto {
  return {
    id: row.id,
    name: row.name,
    type: row.type as TargetType,
    url: row.url ? maskUrl(openUrl(row.url), row.type) : null,
    recipients: row.recipients,
    hasSecret: row.secretEncrypted !== null,
    enabled: row.enabled,
    ...ownerMark(row),
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}
