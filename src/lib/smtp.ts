// One SMTP client for everything that sends e-mail (account mails, alert notifications),
// configured by SMTP_URL / SMTP_FROM, with a timeout on every phase.
import type SMTPTransport from "nodemailer/lib/smtp-transport/index.js";
import type { Config } from "../config.js";

export class SmtpFailure extends Error {
  constructor(message: string, readonly responseCode: number | null) {
    super(message);
  }
}

export async function sendSmtp(
  config: Pick<Config, "SMTP_URL" | "SMTP_FROM">,
  mail: { to: string | string[]; subject: string; text: string },
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<{ statusCode: number }> {
  if (!config.SMTP_URL) throw new SmtpFailure("SMTP is not configured (SMTP_URL)", null);
  // Loaded on the first mail: a service without SMTP never holds nodemailer (~2 MB of heap).
  const { default: nodemailer } = await import("nodemailer");
  const transport = nodemailer.createTransport({
    url: config.SMTP_URL,
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
  } as SMTPTransport.Options);
  const aborted = new Promise<never>((_, reject) =>
    signal?.addEventListener("abort", () => reject(new SmtpFailure("timed out", null)), { once: true }),
  );
  try {
    const info = await Promise.race([transport.sendMail({ from: config.SMTP_FROM, ...mail }), aborted]);
    // SMTP has no HTTP status: 250 is the server's "accepted" reply.
    return { statusCode: /^(\d{3})/.test(String(info.response)) ? Number(String(info.response).slice(0, 3)) : 250 };
  } catch (err) {
    if (err instanceof SmtpFailure) throw err;
    const e = err as Error & { responseCode?: number };
    throw new SmtpFailure(e.message, e.responseCode ?? null);
  } finally {
    transport.close();
  }
}
