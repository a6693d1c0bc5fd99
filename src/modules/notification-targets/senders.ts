// Sending one notification to one target: a signed JSON webhook, a Slack-compatible message,
// or an e-mail. Each returns what the attempt record needs (status code) or throws with the
// reason; the caller times and records every attempt.
import crypto from "node:crypto";
import type { Config } from "../../config.js";
import { ByteBudget, createOutboundClient } from "../../lib/outbound-http.js";
import { outboundPolicyOf, OutboundRefused } from "../../lib/outbound.js";
import { sendSmtp, SmtpFailure } from "../../lib/smtp.js";

export const USER_AGENT = "fleet-manager-notifications/1";
/** Response bytes read from a webhook (enough for an error message; the rest is ignored). */
const MAX_RESPONSE_BYTES = 64 * 1024;

export interface NotificationPayload {
  event: "alert.firing" | "alert.resolved" | "alert.test";
  deliveryId: string;
  organizationId: string;
  createdAt: string;
  /** id null for a target's own test notification (no rule sent it) */
  rule: { id: string | null; name: string; severity: string; summary: string; condition: unknown };
  /** the devices of this transition (at most 100 listed; deviceCount has them all); empty for a config source rule */
  devices: Array<{ id: string; name: string | null; value: number | null }>;
  deviceCount: number;
  /** what the rule watches: devices, or config sources (config_source_failing) */
  subjectType: "device" | "config_source";
  /** the subjects of this transition, devices or config sources (at most 100 listed; subjectCount has them all) */
  subjects: NotificationSubject[];
  subjectCount: number;
  /** a human sentence: what Slack and e-mail show */
  message: string;
}

export interface NotificationSubject {
  type: "device" | "config_source";
  id: string;
  name: string | null;
  value: number | null;
  /** a config source's last sync message (why it was refused or failed) */
  detail?: string | null;
}

export interface Destination {
  type: string;
  url: string | null;
  secret: string | null;
  recipients: string[];
}

export class SendFailure extends Error {
  constructor(message: string, readonly statusCode: number | null, readonly permanent = false) {
    super(message);
  }
}

/** `sha256=<hex>` of HMAC-SHA256(secret, body): what X-Signature carries. */
export function signBody(secret: string, body: string): string {
  return "sha256=" + crypto.createHmac("sha256", secret).update(body).digest("hex");
}

async function postJson(config: Config, url: string, body: string, headers: Record<string, string>, signal: AbortSignal) {
  const client = createOutboundClient({
    policy: outboundPolicyOf(config),
    signal,
    budget: new ByteBudget(MAX_RESPONSE_BYTES),
    maxRedirects: 0, // a POST is never redirected: a 3xx is a failed attempt
    userAgent: USER_AGENT,
  });
  let response;
  try {
    response = await client.request({ url, method: "POST", headers: { "content-type": "application/json", ...headers }, body });
  } catch (err) {
    if (err instanceof OutboundRefused) throw new SendFailure(err.message, null, true);
    throw new SendFailure(signal.aborted ? "timed out" : (err as Error).message, null);
  }
  let text = "";
  try {
    for await (const chunk of response.body) if (text.length < 300) text += Buffer.from(chunk).toString("utf8");
  } catch {
    /* the status is what counts; an oversized or cut body does not change it */
  }
  if (response.status < 200 || response.status >= 300) {
    const detail = text.replace(/\s+/g, " ").trim().slice(0, 200);
    throw new SendFailure(`HTTP ${response.status}${detail ? `: ${detail}` : ""}`, response.status);
  }
  return { statusCode: response.status };
}

export async function send(config: Config, to: Destination, payload: NotificationPayload, attempt: number, signal: AbortSignal): Promise<{ statusCode: number | null }> {
  switch (to.type) {
    case "webhook": {
      const body = JSON.stringify(payload);
      return postJson(config, to.url!, body, {
        "x-signature": signBody(to.secret ?? "", body),
        "x-delivery-id": payload.deliveryId,
        "x-delivery-attempt": String(attempt),
        "x-event": payload.event,
      }, signal);
    }
    case "slack":
      return postJson(config, to.url!, JSON.stringify({ text: payload.message }), {}, signal);
    case "email":
      return sendMail(config, to.recipients, payload, signal);
    default:
      throw new SendFailure(`unknown target type ${to.type}`, null, true);
  }
}

async function sendMail(config: Config, recipients: string[], payload: NotificationPayload, signal: AbortSignal) {
  if (!config.SMTP_URL) throw new SendFailure("SMTP is not configured (SMTP_URL)", null, true);
  try {
    return await sendSmtp(config, {
      to: recipients,
      subject: `[${payload.rule.severity}] ${payload.rule.name}: ${payload.event.replace("alert.", "")}`,
      text: `${payload.message}\n\nRule: ${payload.rule.summary}\nDelivery: ${payload.deliveryId}\n`,
    }, config.NOTIFICATION_TIMEOUT_SECONDS * 1000, signal);
  } catch (err) {
    if (err instanceof SmtpFailure) throw new SendFailure(err.message, err.responseCode);
    throw err;
  }
}
