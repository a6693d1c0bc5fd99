// A recorded shell session played back into a read-only xterm.js (GET
// /remote-sessions/{id}/recording, asciicast v2): at its own pace with long pauses cut to two
// seconds, faster on request, or all at once ("Show all").
import { useEffect, useRef, useState } from "react";
import { FastForward, Play, SkipForward } from "lucide-react";
import { Button } from "../ui/Button";
import { ErrorBox, Loading } from "../ui/states";
import { parseCast, schedule, type Cast } from "./asciicast";
import { TerminalView, type TerminalViewHandle } from "./TerminalView";

async function fetchRecording(sessionId: string): Promise<Cast> {
  const res = await fetch(`/api/v1/remote-sessions/${sessionId}/recording`, { credentials: "same-origin", headers: { accept: "application/x-asciicast" } });
  if (!res.ok) {
    const body = (await res.json().catch(() => null)) as { message?: string } | null;
    throw new Error(body?.message ?? `The recording could not be read (HTTP ${res.status}).`);
  }
  return parseCast(await res.text());
}

export function RecordingPlayer({ sessionId }: { sessionId: string }) {
  const [cast, setCast] = useState<Cast | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [speed, setSpeed] = useState(1);
  const [run, setRun] = useState(0);
  const [done, setDone] = useState(false);
  const view = useRef<TerminalViewHandle>(null);
  const timers = useRef<number[]>([]);

  useEffect(() => {
    fetchRecording(sessionId).then(setCast, setError);
  }, [sessionId]);

  useEffect(() => {
    const terminal = view.current?.terminal;
    if (!cast || !terminal) return;
    terminal.reset();
    setDone(false);
    const times = schedule(cast.events, speed);
    const show = (i: number) => {
      const event = cast.events[i];
      if (event.type === "o") terminal.write(event.data);
      else terminal.resize(event.cols, event.rows);
      if (i === cast.events.length - 1) setDone(true);
    };
    if (cast.events.length === 0) setDone(true);
    if (speed === Infinity) cast.events.forEach((_, i) => show(i));
    else timers.current = times.map((at, i) => window.setTimeout(() => show(i), at));
    return () => {
      timers.current.forEach((t) => window.clearTimeout(t));
      timers.current = [];
    };
  }, [cast, speed, run]);

  if (error) return <ErrorBox error={error} />;
  if (!cast) return <Loading label="Loading the recording" />;
  return (
    <div className="stack">
      <div className="row">
        <Button size="small" icon={<Play />} onClick={() => { setSpeed(1); setRun((n) => n + 1); }}>Play again</Button>
        <Button size="small" icon={<FastForward />} onClick={() => { setSpeed(4); setRun((n) => n + 1); }}>Play at 4×</Button>
        <Button size="small" icon={<SkipForward />} onClick={() => setSpeed(Infinity)}>Show all</Button>
        <span className="muted" role="status">{done ? "Played to the end." : "Playing…"}{cast.skipped > 0 ? ` (${cast.skipped} damaged lines left out)` : ""}</span>
      </div>
      <TerminalView ref={view} label="Recording" readOnly cols={cast.width} rows={cast.height} />
    </div>
  );
}
