// The guided deployment form: application, version and profile; target (a label selector with
// a live count and status breakdown of the devices it matches, or picked devices); parameters
// generated from the manifest's declarations and checked by the API's own rules; strategy with
// a preview of the batches the service will plan; and a review before anything is created. The
// same form edits a draft or stopped deployment (PATCH).
import { useEffect, useId, useMemo, useState, type ReactNode } from "react";
import { Link, useNavigate, useParams, useSearch } from "@tanstack/react-router";
import { useQuery } from "@tanstack/react-query";
import { ArrowLeft, ArrowRight, Check, Plus } from "lucide-react";
import type { RouterOutputs } from "../api/client";
import { q } from "../api/query";
import { useCan } from "../app/session";
import { Button } from "../ui/Button";
import { Card, PageHeader } from "../ui/Card";
import { Donut, Legend, type Slice } from "../ui/charts";
import { described, Field } from "../ui/Field";
import { Empty, ErrorBox, ErrorState, Loading } from "../ui/states";
import { FormFooter } from "../ui/FormFooter";
import { formatDateTime } from "../ui/time";
import { statusLabel } from "../ui/StatusBadge";
import { useAction } from "../ui/useAction";
import { isManaged, ManagedEditState } from "../ui/ManagedMark";
import { useDebounced } from "../ui/useDebounced";
import { selectorProblem, SelectorInput } from "../devices/SelectorInput";
import { DEVICE_STATUSES, STATUS_COLORS } from "../devices/types";
import { architectureLabel, MANIFEST_ARCHITECTURES, reportedArchitectureLabel, UNKNOWN_ARCHITECTURE, type ManifestArchitecture } from "../../../src/modules/groups/architectures";
import { deploymentHref } from "./DeploymentLink";
import { createInput, draftOf, EMPTY_DRAFT, targetOf, targetProblems, updateInput, type DeploymentDraft } from "./draft";
import { inputsFromValues, parameterFields, parameterSubmission, type ParameterDeclaration, type ParameterField } from "./parameter-form";
import { describeWindows, MaintenanceWindowsEditor, windowProblems } from "./MaintenanceWindowsEditor";
import { DisruptionBudgetEditor, ShareField } from "./DisruptionBudgetEditor";
import { previewBatches, strategyErrors, type StrategyInput } from "./strategy-form";
import type { ApplicationVersion, Deployment, Profile } from "./types";
import "./deployments.css";
import { counted, plural } from "../../../src/lib/plural";

const STEPS = ["Application", "Target", "Parameters", "Strategy", "Review"] as const;
type Step = (typeof STEPS)[number];

export function NewDeploymentPage() {
  const search = useSearch({ from: "/app/deployments/new" });
  const canWrite = useCan("deployments:write");
  if (!canWrite) return <FormForbidden title="New deployment" />;
  return <DeploymentForm initial={{ ...EMPTY_DRAFT, applicationId: search.application ?? "" }} />;
}

export function EditDeploymentPage() {
  const { deploymentId } = useParams({ from: "/app/deployments/$deploymentId/edit" });
  const canWrite = useCan("deployments:write");
  const deployment = useQuery({ ...q.deployments.get.options({ id: deploymentId }), enabled: canWrite });
  const versions = useVersions(deployment.data?.applicationId ?? "", canWrite && !!deployment.data);
  if (!canWrite) return <FormForbidden title="Edit deployment" />;
  if (deployment.isPending || (deployment.data && versions.isPending)) return <Loading />;
  if (deployment.isError) return <><PageHeader title="Edit deployment" /><Card><ErrorState error={deployment.error} what="the deployment" retry={() => void deployment.refetch()} /></Card></>;
  if (versions.isError) return <><PageHeader title="Edit deployment" /><Card><ErrorState error={versions.error} what="the application's versions" /></Card></>;
  const d = deployment.data;
  if (isManaged(d)) return <ManagedEditState title={`Edit ${d.name}`} resource={d} back={<a className="btn" href={deploymentHref(d.id)}>Back to the deployment</a>} />;
  if (d.status !== "draft" && d.status !== "stopped") {
    return (
      <>
        <PageHeader title={`Edit ${d.name}`} />
        <Card>
          <Empty title={`This deployment is ${d.status}`} action={<a className="btn" href={deploymentHref(d.id)}>Back to the deployment</a>}>
            A deployment can be edited while it is a draft or stopped. {d.status === "running" ? "A running one changes its version with Upgrade on its page (an update rollout); stop it to change anything else." : "Stop it first to change it."}
          </Empty>
        </Card>
      </>
    );
  }
  const declared = (versions.data?.items.find((v) => v.version === d.version)?.parameters ?? {}) as Record<string, ParameterDeclaration>;
  return <DeploymentForm initial={draftOf(d, inputsFromValues(declared, d.parameters, d.secretParameterNames))} editing={d} />;
}

function FormForbidden({ title }: { title: string }) {
  return (
    <>
      <PageHeader title={title} />
      <Card>
        {/* A role that may read deployments but not write them (a viewer, reached by a link). */}
        <Empty title="Your role cannot create or change deployments" action={<Link to="/deployments">Back to the deployments</Link>}>
          Creating and editing deployments needs the deployments:write permission. An administrator can change your role.
        </Empty>
      </Card>
    </>
  );
}

function useVersions(applicationId: string, enabled = true) {
  return useQuery({ ...q.applications.versions.options({ id: applicationId, limit: 100, offset: 0 }), enabled: enabled && !!applicationId });
}

function DeploymentForm({ initial, editing }: { initial: DeploymentDraft; editing?: Deployment }) {
  const [draft, setDraft] = useState<DeploymentDraft>(initial);
  const [step, setStep] = useState<Step>("Application");
  const [showErrors, setShowErrors] = useState(false);
  const navigate = useNavigate();
  const update = (patch: Partial<DeploymentDraft>) => setDraft((prev) => ({ ...prev, ...patch }));

  const versions = useVersions(draft.applicationId);
  const version: ApplicationVersion | undefined = versions.data?.items.find((v) => v.version === draft.version);
  const profile: Profile | undefined = version?.profiles.find((p) => p.id === draft.profileId);
  const declared = (version?.parameters ?? {}) as Record<string, ParameterDeclaration>;
  const stored = editing && editing.version === draft.version ? { values: editing.parameters, secretNames: editing.secretParameterNames } : undefined;
  const parameters = parameterSubmission(declared, draft.parameters, stored);
  const target = useTargetCount(draft, profile);
  // Batches are cut from the devices the profile can run on (the service's count); the others are skipped first.
  const plannedDevices = target.fit?.eligible;

  const problems: Record<Step, Record<string, string>> = {
    Application: {
      ...(draft.name.trim() ? {} : { name: "a name is required" }),
      ...(draft.applicationId ? {} : { application: "choose an application" }),
      ...(draft.version ? {} : { version: "choose a version" }),
      ...(profile ? {} : { profile: "choose a deployment profile" }),
    },
    Target: targetProblems(draft),
    Parameters: parameters.errors,
    Strategy: { ...strategyErrors(draft.strategy), ...windowProblems(draft.maintenanceWindows) },
    Review: {},
  };
  const stepIndex = STEPS.indexOf(step);

  function next() {
    if (Object.keys(problems[step]).length) {
      setShowErrors(true);
      // The first field named: focus it, so the problem is read out.
      const first = document.querySelector<HTMLElement>(".deployment-form [aria-invalid='true']");
      first?.focus();
      return;
    }
    setShowErrors(false);
    setStep(STEPS[stepIndex + 1]);
  }

  const save = useAction({
    mutationFn: (): Promise<{ id: string; name: string }> => editing
      ? q.deployments.update.call(updateInput(editing.id, draft, editing, parameters.send))
      : q.deployments.create.call(createInput(draft, parameters.send ?? {})),
  }, {
    invalidates: [q.deployments.key()],
    success: (saved) => editing ? `Saved ${saved.name}` : `Created ${saved.name} (draft): start it from its page`,
    onSuccess: (saved) => void navigate({ href: deploymentHref(saved.id) }),
  });

  const errors = showErrors ? problems[step] : {};
  return (
    <>
      <PageHeader
        title={editing ? `Edit ${editing.name}` : "New deployment"}
        description={editing ? `A ${editing.status} deployment: changes apply when it starts.` : "Nothing reaches a device until the deployment is started."}
        breadcrumb={<Link to="/deployments">Deployments</Link>}
      />
      <nav aria-label="Steps" className="steps">
        <ol>
          {STEPS.map((s, i) => (
            <li key={s} aria-current={s === step ? "step" : undefined} className={i < stepIndex ? "steps__done" : undefined}>
              {i < stepIndex ? (
                <button type="button" className="steps__link" onClick={() => setStep(s)}>
                  <Check aria-hidden="true" /> {s}
                </button>
              ) : (
                <span><span className="steps__number">{i + 1}</span> {s}</span>
              )}
            </li>
          ))}
        </ol>
      </nav>
      <form
        className="deployment-form stack"
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          if (step === "Review") void save.run();
          else next();
        }}
      >
        {step === "Application" && <ApplicationStep draft={draft} update={update} errors={errors} editing={!!editing} />}
        {step === "Target" && <TargetStep draft={draft} update={update} errors={errors} target={target} profile={profile} />}
        {step === "Parameters" && <ParametersStep declared={declared} draft={draft} update={update} errors={errors} problems={parameters.errors} stored={stored} />}
        {step === "Strategy" && <StrategyStep draft={draft} update={update} errors={errors} devices={plannedDevices} fit={target.fit} />}
        {step === "Review" && <ReviewStep draft={draft} version={version} profile={profile} declared={declared} devices={plannedDevices} fit={target.fit} keptSecrets={stored && !parameters.send ? stored.secretNames : []} />}
        {/* One submit button: the next step, or on the review the action itself (busy while it runs). */}
        <FormFooter
          action={save}
          className="row form-actions"
          icon={step === "Review" ? <Check /> : <ArrowRight />}
          submitLabel={step === "Review" ? (editing ? "Save changes" : "Create deployment") : `Next: ${STEPS[stepIndex + 1]}`}
        >
          {stepIndex > 0 && (
            <Button icon={<ArrowLeft />} onClick={() => { setShowErrors(false); setStep(STEPS[stepIndex - 1]); }}>Back</Button>
          )}
        </FormFooter>
      </form>
    </>
  );
}

type StepProps = { draft: DeploymentDraft; update: (patch: Partial<DeploymentDraft>) => void; errors: Record<string, string> };

/** A labelled field with its hint and its problem (named next to it, and tied to it for assistive technology). */
function ApplicationStep({ draft, update, errors, editing }: StepProps & { editing: boolean }) {
  const apps = useQuery(q.applications.list.options({ limit: 200, offset: 0 }));
  const versions = useVersions(draft.applicationId);
  // A new application or version: its newest version and first profile, which the person may change.
  useEffect(() => {
    const items = versions.data?.items;
    if (!items?.length) return;
    const chosen = items.find((v) => v.version === draft.version) ?? items[0];
    const profileId = chosen.profiles.some((p) => p.id === draft.profileId) ? draft.profileId : chosen.profiles[0]?.id ?? "";
    if (chosen.version !== draft.version || profileId !== draft.profileId) update({ version: chosen.version, profileId });
  }, [versions.data, draft.version]); // eslint-disable-line react-hooks/exhaustive-deps
  const version = versions.data?.items.find((v) => v.version === draft.version);

  return (
    <Card title="What to deploy">
      <div className="stack">
        <div className="grid grid--2">
          <Field id="deployment-name" label="Name" error={errors.name}>
            <input id="deployment-name" className="input" value={draft.name} maxLength={200} onChange={(e) => update({ name: e.target.value })} {...described("deployment-name", errors.name)} />
          </Field>
          <Field id="deployment-description" label="Description (optional)">
            <input id="deployment-description" className="input" value={draft.description} maxLength={1000} onChange={(e) => update({ description: e.target.value })} />
          </Field>
        </div>
        {apps.isPending ? <Loading /> : apps.isError ? <ErrorState error={apps.error} what="the applications" /> : apps.data.items.length === 0 ? (
          <Empty title="No applications in the catalog">Import applications from a Git or OCI registry first; then deploy them from here.</Empty>
        ) : (
          <div className="grid grid--2">
            <Field id="deployment-application" label="Application" error={errors.application} hint={editing ? "A deployment keeps its application; create another to deploy a different one." : undefined}>
              <select id="deployment-application" className="select" value={draft.applicationId} disabled={editing}
                onChange={(e) => update({ applicationId: e.target.value, version: "", profileId: "", parameters: {} })} {...described("deployment-application", errors.application, editing)}>
                <option value="">Choose an application</option>
                {apps.data.items.map((a) => <option key={a.id} value={a.id}>{a.name} ({a.latestVersion})</option>)}
              </select>
            </Field>
            {draft.applicationId && (
              <Field id="deployment-version" label="Version" error={errors.version}>
                <select id="deployment-version" className="select" value={draft.version} disabled={!versions.data}
                  onChange={(e) => update({ version: e.target.value })} {...described("deployment-version", errors.version)}>
                  {!versions.data && <option value="">Loading versions…</option>}
                  {versions.data?.items.map((v) => <option key={v.id} value={v.version}>{v.version}</option>)}
                </select>
              </Field>
            )}
          </div>
        )}
        {versions.isError && <ErrorBox error={versions.error} />}
        {version && (
          <fieldset className="profiles" aria-describedby={errors.profile ? "deployment-profile-error" : undefined}>
            <legend>Deployment profile</legend>
            {version.profiles.map((p) => {
              const supported = p.requiredResources?.cpu?.architectures;
              const unsupported = supported ? MANIFEST_ARCHITECTURES.filter((a) => !supported.includes(a)) : [];
              return (
                <label key={p.id} className="profile-option">
                  <input type="radio" name="profile" value={p.id} checked={draft.profileId === p.id} onChange={() => update({ profileId: p.id })} />
                  <span className="stack stack--tight">
                    <strong>{p.id} <span className="badge">{p.type}</span></strong>
                    {p.description && <span className="muted">{p.description}</span>}
                    <span className="faint">Components: {p.components.map((c) => c.name).join(", ")}</span>
                    <span className={unsupported.length ? "profile-arch profile-arch--limited" : "profile-arch"}>
                      {supported ? <>Runs on {supported.map(architectureLabel).join(", ")}{unsupported.length > 0 && <> · <strong>not on {unsupported.map(architectureLabel).join(", ")}</strong>: such devices are skipped</>}</> : "Runs on every architecture"}
                    </span>
                  </span>
                </label>
              );
            })}
            {errors.profile && <span id="deployment-profile-error" className="field__error">{errors.profile}</span>}
          </fieldset>
        )}
      </div>
    </Card>
  );
}

type Fit = RouterOutputs["groups"]["eligibility"];

interface TargetCount {
  count: number | undefined;
  /** the service's answer: matched, eligible and skipped devices for the chosen profile (POST /groups/eligibility) */
  fit?: Fit;
  byStatus?: Record<string, number>;
  loading: boolean;
  error: unknown;
}

/**
 * How many devices the target matches now (op 12 for a selector's status breakdown) and how many
 * of them the profile can run on, as the service decides when the deployment starts; kept
 * current by the realtime channel.
 */
function useTargetCount(draft: DeploymentDraft, profile: Profile | undefined): TargetCount {
  const settled = useDebounced(draft.selector, 250);
  const selector = useMemo(() => (draft.targetKind === "selector" && !selectorProblem(settled) ? targetOf({ ...draft, selector: settled }).labelSelector ?? {} : {}), [draft.targetKind, settled]); // eslint-disable-line react-hooks/exhaustive-deps
  const bySelector = draft.targetKind === "selector" && Object.keys(selector).length > 0;
  const byDevices = draft.targetKind === "devices" && draft.deviceIds.length > 0;
  const stats = useQuery({ ...q.groups.query.options({ labelSelector: selector }), enabled: bySelector });
  // The catalog admitted only the architectures manifests name (its output types them as strings).
  const architectures = profile?.requiredResources?.cpu?.architectures as ManifestArchitecture[] | undefined;
  // a system image (RAUC bundle) skips the devices whose agent does not report RAUC, as the deployment will
  const systemImage = profile?.components.some((c) => c.properties.type === "system-image") ?? false;
  const fit = useQuery({
    ...q.groups.eligibility.options({ ...(bySelector ? { labelSelector: selector } : { deviceIds: draft.deviceIds }), architectures, ...(systemImage ? { systemImage } : {}) }),
    enabled: !!profile && (bySelector || byDevices),
  });
  if (draft.targetKind === "devices") return { count: draft.deviceIds.length, fit: byDevices ? fit.data : { matched: 0, eligible: 0, skipped: 0, offline: 0, byArchitecture: {}, skippedByArchitecture: {}, skippedWithoutRauc: 0 }, loading: fit.isLoading, error: fit.error };
  if (!bySelector) return { count: undefined, loading: false, error: null };
  return { count: stats.data?.total, fit: fit.data, byStatus: stats.data?.byStatus, loading: stats.isPending, error: stats.error ?? fit.error };
}

/**
 * The target's fit, said once and plainly: "20 devices match: 16 can run this profile, 3 of them
 * offline now; 4 arm (armv7, armv6) devices cannot and are skipped".
 */
export function fitSentence(fit: Fit): string {
  const offline = fit.offline ? `, ${fit.offline.toLocaleString("en")} of them offline now` : "";
  const head = `${counted(fit.matched, "device")} ${fit.matched === 1 ? "matches" : "match"}: ${fit.eligible.toLocaleString("en")} can run this profile${offline}`;
  if (!fit.skipped) return head;
  const groups = Object.entries(fit.skippedByArchitecture).sort(([, a], [, b]) => b - a).map(([arch, n]) =>
    arch === UNKNOWN_ARCHITECTURE ? `${counted(n, "device")} that reported no architecture` : `${n.toLocaleString("en")} ${architectureLabel(arch)} ${plural(n, "device")}`);
  if (fit.skippedWithoutRauc) groups.push(`${counted(fit.skippedWithoutRauc, "device")} without RAUC (the profile installs a system image)`);
  const list = groups.length > 1 ? `${groups.slice(0, -1).join(", ")} and ${groups.at(-1)}` : groups[0];
  return `${head}; ${list} cannot and ${fit.skipped === 1 ? "is" : "are"} skipped`;
}

function TargetStep({ draft, update, errors, target, profile }: StepProps & { target: TargetCount; profile: Profile | undefined }) {
  const architectures = profile?.requiredResources?.cpu?.architectures;
  const slices: Slice[] = DEVICE_STATUSES.map((s) => ({ key: s, label: statusLabel(s), value: target.byStatus?.[s] ?? 0, color: STATUS_COLORS[s] }));
  return (
    <Card title="Target">
      <div className="stack">
        <div className="segmented" role="group" aria-label="Target by">
          <button type="button" className="segmented__option" aria-pressed={draft.targetKind === "selector"} onClick={() => update({ targetKind: "selector" })}>Label selector</button>
          <button type="button" className="segmented__option" aria-pressed={draft.targetKind === "devices"} onClick={() => update({ targetKind: "devices", continuous: false })}>Picked devices</button>
        </div>
        {draft.targetKind === "selector" ? (
          <>
            <SelectorInput id="deployment-selector" label="Devices whose labels match" value={draft.selector} onChange={(selector) => update({ selector })} />
            {errors.selector && !selectorProblem(draft.selector) && <span className="field__error" role="alert">{errors.selector}</span>}
            {target.error ? <ErrorBox error={target.error} /> : target.count === undefined ? (
              target.loading ? <Loading /> : <p className="muted">Type a selector (key=value, comma-separated) to see the devices it matches.</p>
            ) : (
              <div className="selector-result" aria-live="polite">
                <Donut slices={slices} label="Matching devices by status" center={<><strong className="big-number">{target.count.toLocaleString()}</strong><span className="faint">match</span></>} />
                <div className="stack">
                  <p><strong>{target.count.toLocaleString()}</strong> {plural(target.count, "device")} {target.count === 1 ? "matches" : "match"} now.</p>
                  <Legend slices={slices} />
                  <ArchitectureFit fit={target.fit} architectures={architectures} />
                </div>
              </div>
            )}
            <label className="row">
              <input type="checkbox" checked={draft.continuous} onChange={(e) => update({ continuous: e.target.checked })} />
              Continuous: devices that match later get it too
            </label>
            {draft.continuous && (
              <div className="field narrow-field">
                <label htmlFor="deployment-on-leave">A device that stops matching</label>
                <select id="deployment-on-leave" className="select" value={draft.onLeave} onChange={(e) => update({ onLeave: e.target.value as DeploymentDraft["onLeave"] })}>
                  <option value="remove">removes the application</option>
                  <option value="keep">keeps the application</option>
                </select>
              </div>
            )}
          </>
        ) : (
          <>
            <DevicePicker selected={draft.deviceIds} onChange={(deviceIds) => update({ deviceIds })} error={errors.devices} />
            {target.error ? <ErrorBox error={target.error} /> : draft.deviceIds.length > 0 && <ArchitectureFit fit={target.fit} architectures={architectures} />}
          </>
        )}
      </div>
    </Card>
  );
}

/** How many of the matching devices the profile runs on, and what it would skip (the service's count). */
function ArchitectureFit({ fit, architectures }: { fit: Fit | undefined; architectures: string[] | undefined }) {
  if (!fit) return <p className="faint">Counting the devices this profile can run on…</p>;
  return (
    <p className={fit.skipped ? "arch-fit arch-fit--skips" : "arch-fit"} data-testid="target-fit">
      {fitSentence(fit)}.
      {architectures && <span className="faint"> The profile runs on {architectures.map(architectureLabel).join(", ")}; the others are skipped when it starts.</span>}
    </p>
  );
}

function DevicePicker({ selected, onChange, error }: { selected: string[]; onChange: (ids: string[]) => void; error?: string }) {
  const [text, setText] = useState("");
  const search = useDebounced(text, 250);
  const devices = useQuery(q.devices.list.options({ limit: 20, offset: 0, sort: "name", order: "asc", search: search || undefined }));
  const toggle = (id: string) => onChange(selected.includes(id) ? selected.filter((d) => d !== id) : [...selected, id]);
  return (
    <div className="stack stack--tight">
      <Field id="deployment-device-search" label="Find devices" hint={`${selected.length} picked`} error={error}>
        <input id="deployment-device-search" className="input" type="search" value={text} onChange={(e) => setText(e.target.value)} placeholder="Name or reported device id" {...described("deployment-device-search", error, true)} />
      </Field>
      {devices.isPending ? <Loading /> : devices.isError ? <ErrorState error={devices.error} what="devices" /> : devices.data.items.length === 0 ? (
        <p className="muted">No device matches “{search}”.</p>
      ) : (
        <ul className="device-picks" aria-label="Devices">
          {devices.data.items.map((d) => (
            <li key={d.id}>
              <label className="row">
                <input type="checkbox" checked={selected.includes(d.id)} onChange={() => toggle(d.id)} />
                <span>{d.name}</span> <span className="faint">{reportedArchitectureLabel(d.arch)} · {d.status}</span>
              </label>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/**
 * The parameters, each checked by the API's own rules (parameter-rules.ts) as soon as it loses
 * focus: a field left once shows its problem from then on, kept current while it is corrected;
 * Next shows the problems of the fields not visited yet.
 */
function ParametersStep({ declared, draft, update, errors, problems, stored }: StepProps & { declared: Record<string, ParameterDeclaration>; problems: Record<string, string>; stored?: { secretNames: string[] } }) {
  const fields = parameterFields(declared);
  const [left, setLeft] = useState<ReadonlySet<string>>(() => new Set());
  const setValue = (name: string, value: string) => update({ parameters: { ...draft.parameters, [name]: value } });
  const leave = (name: string) => setLeft((prev) => (prev.has(name) ? prev : new Set(prev).add(name)));
  return (
    <Card title="Parameters">
      {fields.length === 0 ? <p className="muted">This version declares no parameters.</p> : (
        <div className="grid grid--2">
          {fields.map((f) => (
            <ParameterInput key={f.name} field={f} value={draft.parameters[f.name] ?? ""} onChange={(v) => setValue(f.name, v)} onBlur={() => leave(f.name)}
              error={errors[f.name] ?? (left.has(f.name) ? problems[f.name] : undefined)} storedSecret={!!stored?.secretNames.includes(f.name)} />
          ))}
        </div>
      )}
    </Card>
  );
}

function fieldHint(f: ParameterField, storedSecret: boolean): string {
  const parts = [
    f.description,
    f.required ? "required" : f.placeholder ? `default ${f.placeholder}` : "optional",
    f.min !== undefined && f.max !== undefined ? `${f.min} to ${f.max}` : f.min !== undefined ? `at least ${f.min}` : f.max !== undefined ? `at most ${f.max}` : undefined,
    f.pattern && `matches ${f.pattern}`,
    f.maxLength !== undefined && `at most ${f.maxLength} characters`,
    f.secret && (storedSecret ? "secret: stored, never shown; leave empty to keep it" : "secret: stored encrypted, never shown again"),
  ];
  return parts.filter(Boolean).join(" · ");
}

function ParameterInput({ field: f, value, onChange, onBlur, error, storedSecret }: {
  field: ParameterField; value: string; onChange: (v: string) => void; onBlur: () => void; error?: string; storedSecret: boolean;
}) {
  const id = `parameter-${useId().replace(/:/g, "")}`;
  const common = { id, onBlur, ...described(id, error, true), "aria-required": f.required || undefined };
  return (
    <Field id={id} label={<span className="mono">{f.name}</span>} hint={fieldHint(f, storedSecret)} error={error}>
      {f.kind === "select" ? (
        <select className="select" value={value} onChange={(e) => onChange(e.target.value)} {...common}>
          <option value="">{f.placeholder ? `Default (${f.placeholder})` : "Not set"}</option>
          {f.options?.map((o) => <option key={o} value={o}>{o}</option>)}
        </select>
      ) : (
        <input
          className="input"
          type={f.kind === "password" ? "password" : f.kind === "text" ? "text" : "number"}
          step={f.kind === "integer" ? 1 : f.kind === "number" ? "any" : undefined}
          autoComplete={f.kind === "password" ? "new-password" : "off"}
          spellCheck={false}
          placeholder={f.kind === "password" ? (storedSecret ? "unchanged" : "") : f.placeholder}
          value={value}
          onChange={(e) => onChange(e.target.value)}
          {...common}
        />
      )}
    </Field>
  );
}

function StrategyStep({ draft, update, errors, devices, fit }: StepProps & { devices: number | undefined; fit: Fit | undefined }) {
  const s = draft.strategy;
  const setStrategy = (patch: Partial<StrategyInput>) => update({ strategy: { ...s, ...patch } });
  // Every problem shows once the person typed; the step's own errors (after Next) add the rest.
  const shown = { ...strategyErrors(s), ...windowProblems(draft.maintenanceWindows), ...errors };
  const preview = devices === undefined ? null : previewBatches(s, devices);
  return (
    <>
      <Card title="Strategy">
        <div className="stack">
          <div className="segmented" role="group" aria-label="Roll out">
            <button type="button" className="segmented__option" aria-pressed={s.type === "all-at-once"} onClick={() => setStrategy({ type: "all-at-once" })}>All at once</button>
            <button type="button" className="segmented__option" aria-pressed={s.type === "staged"} onClick={() => setStrategy({ type: "staged" })}>Staged</button>
          </div>
          {s.type === "all-at-once" ? (
            <p className="muted">Every eligible device gets the application when the deployment starts.</p>
          ) : (
            <>
              <ShareField id="strategy-canary" label="Canary" value={s.canary} onChange={(canary) => setStrategy({ canary })} error={shown.canary} />
              {s.batches.map((b, i) => (
                <ShareField key={i} id={`strategy-batch-${i}`} label={`Batch ${i + 1}`} value={b} error={shown[`batches.${i}`]}
                  onChange={(v) => setStrategy({ batches: s.batches.map((x, j) => (j === i ? v : x)) })}
                  onRemove={() => setStrategy({ batches: s.batches.filter((_, j) => j !== i) })} />
              ))}
              <div>
                <Button size="small" icon={<Plus />} onClick={() => setStrategy({ batches: [...s.batches, { unit: "percent", amount: "50" }] })}>Add a batch</Button>
                <p className="field__hint">Batch percents are shares of the devices left after the canary; the last batch takes whatever remains.</p>
              </div>
              <div className="grid grid--3">
                <Field id="strategy-success" label="Success threshold (%)" error={shown.successThreshold} hint="running devices a batch needs to succeed">
                  <input id="strategy-success" className="input" inputMode="decimal" value={s.successThreshold} onChange={(e) => setStrategy({ successThreshold: e.target.value })} {...described("strategy-success", shown.successThreshold, true)} />
                </Field>
                <Field id="strategy-failure" label="Failure threshold (%)" error={shown.failureThreshold} hint="failed devices that pause the rollout">
                  <input id="strategy-failure" className="input" inputMode="decimal" value={s.failureThreshold} onChange={(e) => setStrategy({ failureThreshold: e.target.value })} {...described("strategy-failure", shown.failureThreshold, true)} />
                </Field>
                <Field id="strategy-timeout" label="Batch timeout (minutes)" error={shown.batchTimeoutMinutes} hint="below its success threshold after this: the rollout fails">
                  <input id="strategy-timeout" className="input" inputMode="decimal" value={s.batchTimeoutMinutes} onChange={(e) => setStrategy({ batchTimeoutMinutes: e.target.value })} {...described("strategy-timeout", shown.batchTimeoutMinutes, true)} />
                </Field>
              </div>
              <label className="row">
                <input type="checkbox" checked={s.autoAdvance} onChange={(e) => setStrategy({ autoAdvance: e.target.checked })} />
                Advance automatically: start the next batch as soon as one succeeds, without approval
              </label>
              <BatchPreview preview={preview} devices={devices} fit={fit} />
            </>
          )}
        </div>
      </Card>
      <OptionsCard draft={draft} update={update} errors={shown} />
    </>
  );
}

function BatchPreview({ preview, devices, fit }: { preview: ReturnType<typeof previewBatches>; devices: number | undefined; fit: Fit | undefined }) {
  if (devices === undefined) return <p className="muted">The batch sizes show once the target is known.</p>;
  if (!preview) return <p className="muted">The batch sizes show once every field above is valid.</p>;
  return (
    <section aria-labelledby="batch-preview-title" className="batch-preview">
      <h3 id="batch-preview-title">Batches over the {counted(devices, "device")} that can run the profile</h3>
      {fit && <p className="muted" data-testid="batch-fit">{fitSentence(fit)}.</p>}
      {fit && fit.offline > 0 && (
        <p className="muted" data-testid="batch-offline">
          {fit.offline === 1 ? "The offline device comes" : `The ${counted(fit.offline, "offline device")} come`} last: the canary is drawn from the devices seen recently, and a batch that holds an offline device shows it as offline.
        </p>
      )}
      {preview.length === 0 ? <p className="muted">No device the target matches now can run the profile: there would be no batch.</p> : (
        <ol aria-label="Planned batches" className="batch-preview__list">
          {preview.map((b) => (
            <li key={b.index}>
              <span className="batch-preview__bar" data-kind={b.kind}><span className="bar-fill" style={{ width: `${Math.max(2, (b.size / devices) * 100)}%` }} /></span>
              <span>{b.kind === "canary" ? "Canary" : `Batch ${b.index}`}: {counted(b.size, "device")}</span>
            </li>
          ))}
        </ol>
      )}
      <p className="field__hint">Planned by the service's own code when the rollout is initialized; devices it cannot run on are skipped first.</p>
    </section>
  );
}

function OptionsCard({ draft, update, errors }: StepProps) {
  const r = draft.retry;
  const b = draft.budget;
  return (
    <Card title="Rollout options">
      <div className="stack">
        <label className="row">
          <input type="checkbox" checked={r.enabled} onChange={(e) => update({ retry: { ...r, enabled: e.target.checked } })} />
          Retry failed installs automatically
        </label>
        {r.enabled && (
          <div className="grid grid--3">
            <Field id="retry-attempts" label="Attempts in all">
              <input id="retry-attempts" className="input" inputMode="numeric" value={r.maxAttempts} onChange={(e) => update({ retry: { ...r, maxAttempts: e.target.value } })} />
            </Field>
            <Field id="retry-initial" label="First delay (seconds)">
              <input id="retry-initial" className="input" inputMode="numeric" value={r.initialDelaySeconds} onChange={(e) => update({ retry: { ...r, initialDelaySeconds: e.target.value } })} />
            </Field>
            <Field id="retry-max" label="Longest delay (seconds)">
              <input id="retry-max" className="input" inputMode="numeric" value={r.maxDelaySeconds} onChange={(e) => update({ retry: { ...r, maxDelaySeconds: e.target.value } })} />
            </Field>
          </div>
        )}
        <DisruptionBudgetEditor value={b} onChange={(budget) => update({ budget })} errors={errors}
          toggleLabel="Limit disruption: how many devices of a group may be updating at once" wholeGroup="none: the whole deployment is one group" />
        <Field id="deployment-start-at" label="Scheduled start (optional)" hint="the deployment starts itself then; empty: start it by hand">
          <input id="deployment-start-at" className="input narrow-field" type="datetime-local" value={draft.startAt} onChange={(e) => update({ startAt: e.target.value })} aria-describedby="deployment-start-at-hint" />
        </Field>
        <MaintenanceWindowsEditor value={draft.maintenanceWindows} onChange={(maintenanceWindows) => update({ maintenanceWindows })} errors={errors} />
      </div>
    </Card>
  );
}

function ReviewStep({ draft, version, profile, declared, devices, fit, keptSecrets }: {
  draft: DeploymentDraft;
  version: ApplicationVersion | undefined;
  profile: Profile | undefined;
  declared: Record<string, ParameterDeclaration>;
  devices: number | undefined;
  fit: Fit | undefined;
  keptSecrets: string[];
}) {
  const s = draft.strategy;
  const preview = devices === undefined ? null : previewBatches(s, devices);
  const target = targetOf(draft);
  return (
    <Card title="Review">
      <dl className="facts" aria-label="What will be created">
        <dt>Name</dt><dd>{draft.name}</dd>
        {draft.description && <><dt>Description</dt><dd>{draft.description}</dd></>}
        <dt>Application</dt><dd>{version?.name} <span className="mono">{draft.version}</span></dd>
        <dt>Profile</dt><dd>{profile?.id} ({profile?.type})</dd>
        <dt>Target</dt>
        <dd>
          {target.labelSelector ? <span className="mono">{Object.entries(target.labelSelector).map(([k, v]) => `${k}=${v}`).join(", ")}</span> : `${draft.deviceIds.length} picked devices`}
          {fit && <> · {fitSentence(fit)}</>}
          {draft.targetKind === "selector" && draft.continuous && <> · continuous ({draft.onLeave} on leave)</>}
        </dd>
        <dt>Parameters</dt>
        <dd>
          {Object.keys(declared).length === 0 ? "none" : (
            <ul className="plain-list">
              {Object.keys(declared).map((name) => {
                const value = draft.parameters[name];
                const secret = declared[name].secret;
                const shown = value ? (secret ? "•••••••• (set)" : value) : secret && keptSecrets.includes(name) ? "•••••••• (unchanged)" : `default${declared[name].value !== undefined && !secret ? ` (${String(declared[name].value)})` : ""}`;
                return <li key={name}><span className="mono">{name}</span>: {shown}</li>;
              })}
            </ul>
          )}
        </dd>
        <dt>Strategy</dt>
        <dd>
          {s.type === "all-at-once" ? "All at once" : (
            <>
              Staged: {preview ? preview.map((b) => `${b.kind === "canary" ? "canary" : `batch ${b.index}`} ${b.size}`).join(", ") : "batches planned when it starts"}; success {s.successThreshold}%, failure {s.failureThreshold}%, timeout {s.batchTimeoutMinutes} min
              {s.autoAdvance ? ", advancing automatically" : ", each batch approved by hand"}
            </>
          )}
        </dd>
        <dt>Options</dt>
        <dd>
          {[
            draft.retry.enabled && `retry up to ${draft.retry.maxAttempts} attempts`,
            draft.budget.enabled && `at most ${draft.budget.amount}${draft.budget.unit === "percent" ? "%" : ""} unavailable${draft.budget.groupBy ? ` per ${draft.budget.groupBy}` : ""}`,
            draft.startAt && `starts itself at ${formatDateTime(draft.startAt)}`,
            draft.maintenanceWindows && `installs in ${describeWindows(draft.maintenanceWindows)}`,
          ].filter(Boolean).join("; ") || "none"}
        </dd>
      </dl>
    </Card>
  );
}
