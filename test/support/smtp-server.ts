// A minimal SMTP server on loopback (EHLO, MAIL, RCPT, DATA, QUIT, AUTH PLAIN when asked),
// enough for nodemailer to deliver to: a real peer for the e-mail notification target and the
// mail outbox. `failNext` makes it refuse the next transactions (a server in trouble).
import net from "node:net";

export interface ReceivedMail {
  from: string;
  to: string[];
  data: string;
}

/** The text of a received mail: the body after the headers, quoted-printable decoded. */
export function textOf(mail: ReceivedMail): string {
  const split = mail.data.indexOf("\r\n\r\n");
  const headers = mail.data.slice(0, split);
  const body = mail.data.slice(split + 4);
  if (!/Content-Transfer-Encoding: quoted-printable/i.test(headers)) return body;
  return body.replace(/=\r\n/g, "").replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

/** The mails received for this address. */
export const mailsFor = (server: SmtpServer, address: string) => server.mails.filter((m) => m.to.some((to) => to.includes(address)));

export interface SmtpServer {
  url: string;
  mails: ReceivedMail[];
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedMail[]>;
  /**
   * The next `count` transactions are refused: at MAIL FROM with 451 (try again later), or at
   * AUTH with 535 echoing what the client sent (a server that repeats the credentials).
   */
  failNext(count: number, at?: "MAIL" | "AUTH"): void;
  close(): Promise<void>;
}

export async function startSmtpServer(options: { auth?: boolean } = {}): Promise<SmtpServer> {
  const mails: ReceivedMail[] = [];
  const waiters: Array<() => void> = [];
  const failures = { MAIL: 0, AUTH: 0 };
  const server = net.createServer((socket) => {
    let buffer = "";
    let inData = false;
    let current: ReceivedMail = { from: "", to: [], data: "" };
    const reply = (line: string) => socket.write(line + "\r\n");
    reply("220 test-smtp ready");
    socket.on("data", (chunk) => {
      buffer += chunk.toString("utf8");
      for (;;) {
        if (inData) {
          const end = buffer.indexOf("\r\n.\r\n");
          if (end < 0) return;
          current.data = buffer.slice(0, end);
          buffer = buffer.slice(end + 5);
          inData = false;
          mails.push(current);
          current = { from: "", to: [], data: "" };
          reply("250 2.0.0 queued");
          waiters.splice(0).forEach((w) => w());
          continue;
        }
        const eol = buffer.indexOf("\r\n");
        if (eol < 0) return;
        const line = buffer.slice(0, eol);
        buffer = buffer.slice(eol + 2);
        const verb = line.slice(0, 4).toUpperCase();
        if (verb === "EHLO" || verb === "HELO") reply(options.auth ? "250-test-smtp\r\n250 AUTH PLAIN" : "250 test-smtp");
        else if (verb === "AUTH") failures.AUTH > 0 ? (failures.AUTH--, reply(`535 5.7.8 authentication failed for ${line.slice(5)}`)) : reply("235 2.7.0 ok");
        else if (verb === "MAIL" && failures.MAIL > 0) failures.MAIL--, reply("451 4.3.0 mailbox busy, try again later");
        else if (verb === "MAIL") (current.from = line.replace(/^MAIL FROM:\s*/i, "")), reply("250 2.1.0 ok");
        else if (verb === "RCPT") current.to.push(line.replace(/^RCPT TO:\s*/i, "")), reply("250 2.1.5 ok");
        else if (verb === "DATA") (inData = true), reply("354 end with <CRLF>.<CRLF>");
        else if (verb === "QUIT") reply("221 bye"), socket.end();
        else if (verb === "RSET" || verb === "NOOP") reply("250 ok");
        else reply("502 not implemented");
      }
    });
    socket.on("error", () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    mails,
    waitFor: (count, timeoutMs = 15_000) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`SMTP: ${mails.length} of ${count} mails`)), timeoutMs);
        const check = () => (mails.length >= count ? (clearTimeout(timer), resolve(mails.slice(0, count))) : waiters.push(check));
        check();
      }),
    failNext: (count, at = "MAIL") => void (failures[at] = count),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
