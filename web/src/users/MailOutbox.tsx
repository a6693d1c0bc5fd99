// The mail outbox on the platform Users page, for Super Admins (GET /api/v1/mail/outbox): every
// invitation, password reset and account mail the service queued, newest first, with how its
// delivery stands. Without SMTP_URL nothing goes out: a note above the table says so, and each
// waiting message carries the API's note on where its link is instead. Bodies are never shown.
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { Info } from "lucide-react";
import type { RouterOutputs } from "../api/client";
import { q } from "../api/query";
import { Card } from "../ui/Card";
import type { Column } from "../ui/DataTable";
import { QueryTable } from "../ui/QueryTable";
import { Empty } from "../ui/states";
import { DateTime } from "../ui/time";
import { useLocalPage } from "../ui/useLocalPage";

type Mail = RouterOutputs["mail"]["outbox"]["items"][number];
const PAGE = 25;

/** The state as a person reads it: a pending message that already failed once is being retried. */
export function mailStateLabel(mail: Pick<Mail, "status" | "attempts">): string {
  return mail.status === "pending" && mail.attempts > 0 ? "retrying" : mail.status;
}

const TONE: Record<string, string> = { sent: "badge--success", failed: "badge--danger", retrying: "badge--warning", sending: "badge--accent", pending: "badge--pending" };

const when = (iso: string | null) => iso ? <DateTime value={iso} /> : <span className="faint">–</span>;

const COLUMNS: Column<Mail>[] = [
  { id: "to", header: "Recipient", cell: (m) => m.to },
  {
    id: "subject",
    header: "Message",
    cell: (m) => (
      <div className="who">
        <span>{m.subject}</span>
        <span className="faint">{m.template.replace(/_/g, " ")}, queued <DateTime value={m.createdAt} /></span>
      </div>
    ),
  },
  {
    id: "state",
    header: "State",
    cell: (m) => {
      const state = mailStateLabel(m);
      return (
        <div className="who">
          <span className={`badge mail-state ${TONE[state] ?? ""}`}>{state}</span>
          {m.lastError && <span className="faint">{m.status === "failed" ? "Gave up: " : "Last attempt: "}{m.lastError}</span>}
          {m.note && <span className="faint">{m.note}</span>}
        </div>
      );
    },
  },
  { id: "attempts", header: "Attempts", className: "nowrap", cell: (m) => `${m.attempts} of ${m.maxAttempts}` },
  { id: "last", header: "Last attempt", cell: (m) => when(m.lastAttemptAt) },
  { id: "next", header: "Next attempt", cell: (m) => m.status === "sent" ? <span className="faint">sent <DateTime value={m.sentAt ?? m.lastAttemptAt ?? m.createdAt} /></span> : when(m.nextAttemptAt) },
];

export function MailOutbox() {
  const page = useLocalPage(PAGE);
  const outbox = useQuery({ ...q.mail.outbox.options(page.input), placeholderData: keepPreviousData });
  return (
    <Card title="Mail outbox" flush>
      {outbox.data && !outbox.data.smtpConfigured && (
        <div className="alert-box alert-box--warning" role="note" aria-label="No SMTP server">
          <Info aria-hidden="true" />
          <p>
            No SMTP server is configured (SMTP_URL): no mail goes out, and messages wait here as pending until one is.
            Meanwhile invitation links are shown once after inviting or resending (Members &gt; Invitations); each message's note says where its link is.
          </p>
        </div>
      )}
      <QueryTable query={outbox} what="the mail outbox" caption="Mail outbox" columns={COLUMNS} rowKey={(m) => m.id} page={page} pageLabel="Mail outbox pages"
        empty={<Empty title="No mail yet">Invitations, password resets and account mails appear here with their delivery state.</Empty>} />
    </Card>
  );
}
