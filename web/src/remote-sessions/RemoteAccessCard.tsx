// The organization's remote-access policy on its settings page (GET/PUT
// /remote-sessions/settings): off until an administrator turns it on; a reason per session,
// a label selector of the devices that may be reached, shell recording with its size cap,
// timeouts and per-user/per-device limits. Read with remote:read, changed with remote:manage.
import { Fragment, useState } from "react";
import { useQuery } from "@tanstack/react-query";
import type { RouterOutputs } from "../api/client";
import { q } from "../api/query";
import { useCan } from "../app/session";
import { Card } from "../ui/Card";
import { FormFooter } from "../ui/FormFooter";
import { ErrorState, Loading } from "../ui/states";
import { useAction } from "../ui/useAction";

type Settings = RouterOutputs["remoteSessions"]["settings"];

export function RemoteAccessCard() {
  const canRead = useCan("remote:read");
  const canManage = useCan("remote:manage");
  const settings = useQuery({ ...q.remoteSessions.settings.options(), enabled: canRead });
  if (!canRead) return null;
  return (
    <Card title="Remote access">
      {settings.isError ? <ErrorState error={settings.error} what="the remote-access settings" retry={() => settings.refetch()} />
        : !settings.data ? <Loading />
        : canManage ? <RemoteAccessForm key={JSON.stringify(settings.data)} settings={settings.data} />
        : <RemoteAccessFacts settings={settings.data} />}
    </Card>
  );
}

const NUMBERS = [
  ["idleTimeoutSeconds", "Idle timeout (seconds)", 30, 86_400],
  ["maxDurationSeconds", "Longest session (seconds)", 60, 604_800],
  ["maxSessionsPerUser", "Sessions at once per person", 1, 100],
  ["maxSessionsPerDevice", "Sessions at once per device", 1, 100],
  ["joinTimeoutSeconds", "Time for the device to join (seconds)", 5, 300],
  ["recordingRetentionDays", "Keep recordings (days)", 1, 3650],
] as const;

const INTRO = (
  <p className="muted">
    Lets people whose role names the remote permissions open a shell, run a command, forward a port or copy a file on a device, through the service.
    Each device's own agent configuration can still refuse any kind.
  </p>
);

/** A reader (remote:read without remote:manage) sees the policy as facts, not as disabled inputs. */
function RemoteAccessFacts({ settings }: { settings: Settings }) {
  const yesNo = (value: boolean) => (value ? "yes" : "no");
  return (
    <div className="stack">
      {INTRO}
      <dl className="facts">
        <dt>Allowed</dt><dd>{yesNo(settings.enabled)}</dd>
        <dt>Reason required</dt><dd>{yesNo(settings.requireReason)}</dd>
        <dt>Shell recorded</dt><dd>{settings.recordShell ? `yes, up to ${settings.recordingMaxBytes / 1024 / 1024} MiB` : "no"}</dd>
        <dt>Only devices matching</dt><dd>{settings.deviceSelector ? <code>{settings.deviceSelector}</code> : <span className="faint">every device</span>}</dd>
        {NUMBERS.map(([key, label]) => <Fragment key={key}><dt>{label}</dt><dd>{settings[key]}</dd></Fragment>)}
      </dl>
      <p className="field__hint">Changing them needs <code>remote:manage</code> (owners and administrators).</p>
    </div>
  );
}

function RemoteAccessForm({ settings }: { settings: Settings }) {
  const [form, setForm] = useState({ ...settings, deviceSelector: settings.deviceSelector ?? "", recordingMaxMiB: settings.recordingMaxBytes / 1024 / 1024 });
  const set = <K extends keyof typeof form>(key: K, value: (typeof form)[K]) => setForm((f) => ({ ...f, [key]: value }));
  const save = useAction(q.remoteSessions.updateSettings.mutation(), { invalidates: [q.remoteSessions.key()], success: "Remote-access settings saved" });
  const body = () => ({
    enabled: form.enabled,
    requireReason: form.requireReason,
    deviceSelector: form.deviceSelector.trim() || null,
    recordShell: form.recordShell,
    recordingMaxBytes: Math.round(form.recordingMaxMiB * 1024 * 1024),
    ...Object.fromEntries(NUMBERS.map(([key]) => [key, form[key]])),
  });

  return (
    <form className="stack" onSubmit={save.submit(body)} aria-label="Remote-access settings">
      {INTRO}
      <fieldset className="stack">
        <label className="row"><input type="checkbox" checked={form.enabled} onChange={(e) => set("enabled", e.target.checked)} /> Allow remote access</label>
        <label className="row"><input type="checkbox" checked={form.requireReason} onChange={(e) => set("requireReason", e.target.checked)} /> Require a reason for each session</label>
        <label className="row"><input type="checkbox" checked={form.recordShell} onChange={(e) => set("recordShell", e.target.checked)} /> Record shell sessions</label>
        <div className="grid grid--2">
          <div className="field">
            <label htmlFor="remote-selector">Only devices matching</label>
            <input id="remote-selector" className="input mono" placeholder="site=berlin,tier=edge" value={form.deviceSelector} onChange={(e) => set("deviceSelector", e.target.value)} aria-describedby="remote-selector-hint" />
            <span id="remote-selector-hint" className="field__hint">A label selector; empty: every device.</span>
          </div>
          <div className="field">
            <label htmlFor="remote-recording-max">Recording cap (MiB)</label>
            <input id="remote-recording-max" className="input" type="number" min={0.0625} max={64} step="any" value={form.recordingMaxMiB} onChange={(e) => set("recordingMaxMiB", Number(e.target.value))} aria-describedby="remote-recording-max-hint" />
            <span id="remote-recording-max-hint" className="field__hint">Past it the recording stops; the session goes on.</span>
          </div>
          {NUMBERS.map(([key, label, min, max]) => (
            <div className="field" key={key}>
              <label htmlFor={`remote-${key}`}>{label}</label>
              <input id={`remote-${key}`} className="input" type="number" min={min} max={max} step={1} value={form[key]} onChange={(e) => set(key, Number(e.target.value))} />
            </div>
          ))}
        </div>
      </fieldset>
      <FormFooter action={save} inline={false} submitLabel="Save remote-access settings" />
    </form>
  );
}
