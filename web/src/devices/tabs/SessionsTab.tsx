// The device's remote sessions (GET /remote-sessions?deviceId=): who, what kind, when, how
// much each way, how it ended; a recorded shell session plays back in a read-only terminal.
import { lazy, Suspense, useState } from "react";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { Play } from "lucide-react";
import type { RouterOutputs } from "../../api/client";
import { q } from "../../api/query";
import { useCan, useSession } from "../../app/session";
import { Button } from "../../ui/Button";
import { Card } from "../../ui/Card";
import type { Column } from "../../ui/DataTable";
import { Dialog } from "../../ui/Dialog";
import { QueryTable } from "../../ui/QueryTable";
import { Empty, Forbidden, Loading } from "../../ui/states";
import { DateTime } from "../../ui/time";
import { useLocalPage } from "../../ui/useLocalPage";
import type { Device } from "../types";

type Session = RouterOutputs["remoteSessions"]["list"]["items"][number];

const RecordingPlayer = lazy(() => import("../../remote-sessions/RecordingPlayer").then((m) => ({ default: m.RecordingPlayer })));

const bytes = (n: number) => (n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1024 / 1024).toFixed(1)} MiB`);

const WHAT: Record<Session["kind"], (s: Session) => string> = {
  shell: () => "shell",
  exec: (s) => `exec ${s.command.join(" ")}`,
  "port-forward": (s) => `port-forward ${s.target ? `${s.target.host}:${s.target.port}` : ""}`,
  "file-read": (s) => `file-read ${s.path ?? ""}`,
  "file-write": (s) => `file-write ${s.path ?? ""}`,
};

export function SessionsTab({ device }: { device: Device }) {
  const canRead = useCan("remote:read");
  const me = useSession();
  const page = useLocalPage(25);
  const [playing, setPlaying] = useState<Session | null>(null);
  const sessions = useQuery({ ...q.remoteSessions.list.options({ deviceId: device.id, ...page.input }), enabled: canRead, placeholderData: keepPreviousData });
  if (!canRead) return <Forbidden what="this device's remote sessions" />;

  const columns: Column<Session>[] = [
    { id: "who", header: "Who", cell: (s) => (s.userId === me.userId ? `${me.name} (you)` : <span className="mono" title={s.userId}>{s.userId.slice(0, 8)}</span>) },
    { id: "kind", header: "Kind", cell: (s) => <span className="mono">{WHAT[s.kind](s)}</span> },
    { id: "reason", header: "Reason", cell: (s) => s.reason ?? <span className="faint">none</span> },
    { id: "start", header: "Started", cell: (s) => (s.startedAt ? <DateTime value={s.startedAt} /> : <span className="faint">never joined</span>) },
    { id: "end", header: "Ended", cell: (s) => (s.endedAt ? <><DateTime value={s.endedAt} /> <span className="faint">{s.endReason}</span></> : <span className="badge badge--online">{s.state}</span>) },
    { id: "bytes", header: "Bytes in / out", cell: (s) => `${bytes(s.bytesToDevice)} / ${bytes(s.bytesFromDevice)}` },
    { id: "exit", header: "Exit code", cell: (s) => s.exitCode ?? <span className="faint">none</span> },
    {
      id: "recording",
      header: "Recording",
      cell: (s) => (s.recorded && s.state === "ended"
        ? <Button size="small" icon={<Play />} onClick={() => setPlaying(s)} aria-label={`Play the recording of the session started ${s.startedAt ?? s.createdAt}`}>Play</Button>
        : <span className="faint">{s.kind === "shell" ? (s.recorded ? "after the end" : "not recorded") : "n/a"}</span>),
    },
  ];

  return (
    <Card title="Remote sessions" flush>
      <QueryTable query={sessions} what="this device's remote sessions" caption="Remote sessions" columns={columns} rowKey={(s) => s.id} page={page} pageLabel="Remote session pages"
        empty={<Empty title="No remote sessions yet">Open one from the Terminal tab, or with <code>fleet ssh {device.name}</code>.</Empty>} />
      <Dialog open={playing !== null} onClose={() => setPlaying(null)} title="Recording of a shell session" wide>
        {playing && (
          <Suspense fallback={<Loading label="Loading the player" />}>
            <RecordingPlayer sessionId={playing.id} />
          </Suspense>
        )}
      </Dialog>
    </Card>
  );
}
