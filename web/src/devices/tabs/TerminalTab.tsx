// A shell on the device in the browser (docs/remote-access.md, "The console's terminal"):
// xterm.js loaded with this tab only, resized with its box, with a reason when the
// organization asks for one, and a clear note when it cannot be opened (remote access off, the
// device offline, no permission). Below it, "Download a file" copies one file from the device.
import { useCallback, useRef, useState, type FormEvent } from "react";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { Link } from "@tanstack/react-router";
import { ClipboardCopy, ClipboardPaste, Download, SquareTerminal, X } from "lucide-react";
import { q } from "../../api/query";
import { useCan } from "../../app/session";
import { Button } from "../../ui/Button";
import { Card } from "../../ui/Card";
import { Field } from "../../ui/Field";
import { useToast } from "../../ui/toast";
import { TerminalView, type TerminalViewHandle } from "../../remote-sessions/TerminalView";
import { useShellSession } from "../../remote-sessions/useShellSession";
import { downloadFromDevice } from "../../remote-sessions/download";
import type { Device } from "../types";

export function TerminalTab({ device }: { device: Device }) {
  const canShell = useCan("remote:shell");
  const canRead = useCan("remote:read");
  const canManage = useCan("remote:manage");
  const canDownload = useCan("remote:files-read");
  const settings = useQuery({ ...q.remoteSessions.settings.options(), enabled: canRead });
  const requireReason = settings.data?.requireReason ?? false;
  const [reason, setReason] = useState("");

  let blocker: string | null = null;
  if (settings.data && !settings.data.enabled) blocker = "Remote access is off for this organization.";
  else if (device.status === "offline") blocker = "The device is offline: a terminal needs it connected.";

  return (
    <div className="stack">
      {blocker && (
        <p className="alert-box alert-box--warning terminal-note" role="note" aria-label="Remote access">
          {blocker}
          {settings.data && !settings.data.enabled && (canManage ? <> Turn it on in <Link to="/organization">Organization settings</Link>.</> : " An administrator can turn it on.")}
        </p>
      )}
      {!canShell && (
        <p className="alert-box alert-box--info terminal-note" role="note" aria-label="Permission">
          Your role does not include <code>remote:shell</code>, which a terminal needs. It is granted only by a role that names it (owners and administrators have it).
        </p>
      )}
      {requireReason && (
        <Field id="remote-reason" label="Reason" hint="This organization records why each session is opened.">
          <input id="remote-reason" className="input" maxLength={500} value={reason} onChange={(e) => setReason(e.target.value)} aria-describedby="remote-reason-hint" />
        </Field>
      )}
      {canShell && <ShellCard device={device} reason={reason.trim() || undefined} disabled={!!blocker || (requireReason && !reason.trim())} />}
      {canDownload && <DownloadCard device={device} reason={reason.trim() || undefined} disabled={!!blocker || (requireReason && !reason.trim())} />}
    </div>
  );
}

function ShellCard({ device, reason, disabled }: { device: Device; reason?: string; disabled: boolean }) {
  const view = useRef<TerminalViewHandle>(null);
  const toast = useToast();
  const queryClient = useQueryClient();
  const shell = useShellSession(useCallback(() => {
    const terminal = view.current?.terminal;
    return terminal ? { write: (data: Uint8Array, parsed: () => void) => terminal.write(data, parsed) } : null;
  }, []));
  const live = shell.state.phase === "live";
  const busy = shell.state.phase === "opening";

  const open = async () => {
    const terminal = view.current?.terminal;
    if (!terminal) return;
    terminal.reset();
    view.current?.fit();
    await shell.open({ deviceId: device.id, reason, cols: terminal.cols, rows: terminal.rows });
    view.current?.focus();
    void queryClient.invalidateQueries({ queryKey: q.remoteSessions.key() });
  };

  return (
    <Card
      title="Terminal"
      actions={
        <div className="row">
          <Button size="small" icon={<ClipboardCopy />} onClick={() => void view.current?.copySelection().then((copied) => copied && toast.success("Selection copied"))} title="Ctrl+Shift+C">Copy selection</Button>
          <Button size="small" icon={<ClipboardPaste />} disabled={!live} onClick={() => void view.current?.paste().catch((err) => toast.error(err, "Could not paste"))} title="Ctrl+Shift+V">Paste</Button>
          {live
            ? <Button size="small" variant="danger" icon={<X />} onClick={shell.close}>Close session</Button>
            : <Button size="small" variant="primary" icon={<SquareTerminal />} busy={busy} disabled={disabled || busy} onClick={() => void open()}>{shell.state.phase === "ended" ? "Open a new session" : "Open terminal"}</Button>}
        </div>
      }
    >
      <div role="status" aria-live="polite" className="terminal-note">
        {shell.state.phase === "idle" && <span className="muted">A shell under a pty on {device.name}, as the agent's remote user. Ctrl+Shift+C and Ctrl+Shift+V copy and paste.</span>}
        {busy && <span className="muted">Opening a session…</span>}
        {live && <span>Connected to {device.name}.</span>}
        {shell.state.phase === "ended" && <span className={shell.state.tone === "error" ? "field__error" : "muted"}>{shell.state.message}</span>}
      </div>
      {shell.dropped > 0 && (
        <p className="alert-box alert-box--warning terminal-note" role="alert">
          The terminal could not keep up: {shell.dropped.toLocaleString()} bytes of output were left out. Stop the command (Ctrl+C) or send its output to a file.
        </p>
      )}
      <TerminalView ref={view} label={`Terminal of ${device.name}`} onData={shell.send} onResize={shell.resize} />
    </Card>
  );
}

function DownloadCard({ device, reason, disabled }: { device: Device; reason?: string; disabled: boolean }) {
  const [path, setPath] = useState("");
  const [progress, setProgress] = useState<string | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const toast = useToast();
  const absolute = path.trim().startsWith("/");

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!absolute) return;
    setBusy(true);
    setProblem(null);
    try {
      const done = await downloadFromDevice(device.id, path.trim(), reason, (received, size) => setProgress(size ? `${received.toLocaleString()} of ${size.toLocaleString()} bytes` : `${received.toLocaleString()} bytes`));
      toast.success(`Downloaded ${done.name}: ${done.size.toLocaleString()} bytes, SHA-256 checked`);
      setProgress(`${done.name}: ${done.size.toLocaleString()} bytes, SHA-256 ${done.sha256}`);
    } catch (err) {
      setProgress(null);
      setProblem((err as Error).message);
    } finally {
      setBusy(false);
    }
  };

  return (
    <Card title="Download a file">
      <form className="terminal-toolbar" onSubmit={(e) => void submit(e)} aria-label="Download a file from the device">
        <Field id="download-path" label="Path on the device" error={path && !absolute ? "An absolute path, starting with /" : problem ?? undefined}>
          <input id="download-path" className="input mono" placeholder="/var/log/app.log" value={path} onChange={(e) => setPath(e.target.value)}
            aria-invalid={!!problem || (!!path && !absolute) || undefined} aria-describedby={problem || (path && !absolute) ? "download-path-error" : undefined} />
        </Field>
        <Button type="submit" icon={<Download />} busy={busy} disabled={disabled || busy || !absolute}>Download</Button>
      </form>
      {progress && <p className="muted" role="status">{progress}</p>}
    </Card>
  );
}
