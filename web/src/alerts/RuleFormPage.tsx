// Create or edit an alert rule. The condition's fields follow its type (rule-form.ts), the scope
// is a label selector with the live count of the devices it matches now (op 12, POST
// /groups/query, as the deployment form does) or, for a failing config source, the sources
// watched (none picked: every source; no label selector), then severity, cooldown and the
// notification targets. Problems are named next to their field as the user types, in the API's words.
import { useEffect, useMemo, useState } from "react";
import { Link, useNavigate, useParams } from "@tanstack/react-router";
import { useQuery } from "@tanstack/react-query";
import { parseSelector } from "../../../src/modules/devices/selector";
import { q } from "../api/query";
import { useCan, useSession } from "../app/session";
import { Button } from "../ui/Button";
import { Card, PageHeader } from "../ui/Card";
import { FormFooter } from "../ui/FormFooter";
import { Empty, ErrorBox, ErrorState, Loading } from "../ui/states";
import { useAction } from "../ui/useAction";
import { useDebounced } from "../ui/useDebounced";
import { useFormFields } from "../ui/useFormFields";
import { SelectorInput } from "../devices/SelectorInput";
import { AlertsAreaNav } from "./AreaNav";
import { appliesToDevices, EMPTY_RULE, formOfRule, ruleBody, ruleProblems, type RuleForm } from "./rule-form";
import { CONDITION_LABEL, METRIC_LABEL, OPERATOR_LABEL, SEVERITY_ORDER, type ConditionType, type MetricName, type Operator, type Severity } from "./types";
import { isManaged, ManagedEditState } from "../ui/ManagedMark";
import "./alerts.css";
import { plural } from "../../../src/lib/plural";

function NotYours({ title }: { title: string }) {
  return (
    <>
      <PageHeader title={title} />
      <Card>
        <Empty title="Changing alert rules is not part of your role" action={<Link to="/alerts/rules">Back to the alert rules</Link>}>
          Your role can read the alert rules; someone with the permission to change them can create or edit one.
        </Empty>
      </Card>
    </>
  );
}

export function NewRulePage() {
  if (!useCan("alerts:write")) return <NotYours title="New alert rule" />;
  return <RuleFormView title="New alert rule" initial={EMPTY_RULE} ruleId={null} />;
}

export function EditRulePage() {
  const { ruleId } = useParams({ from: "/app/alerts/rules/$ruleId/edit" });
  const canWrite = useCan("alerts:write");
  const rule = useQuery({ ...q.alertRules.get.options({ id: ruleId }), enabled: canWrite });
  if (!canWrite) return <NotYours title="Edit alert rule" />;
  if (rule.isPending) return <Loading />;
  if (rule.isError) return <><PageHeader title="Edit alert rule" /><Card><ErrorState error={rule.error} what="the alert rule" retry={() => void rule.refetch()} /></Card></>;
  if (isManaged(rule.data)) return <ManagedEditState title={`Edit ${rule.data.name}`} resource={rule.data} back={<Link to="/alerts/rules">Back to the alert rules</Link>} />;
  return <RuleFormView title={`Edit ${rule.data.name}`} initial={formOfRule(rule.data)} ruleId={rule.data.id} />;
}

/** How many devices the selector matches now; {} is every device of the organization. */
function useScopeCount(selector: string) {
  const settled = useDebounced(selector, 250);
  const labelSelector = useMemo(() => {
    try {
      return parseSelector(settled);
    } catch {
      return null;
    }
  }, [settled]);
  const stats = useQuery({ ...q.groups.query.options({ labelSelector: labelSelector ?? {} }), enabled: labelSelector !== null });
  return { count: labelSelector === null ? undefined : stats.data?.total, loading: stats.isPending, error: stats.error, every: labelSelector !== null && Object.keys(labelSelector).length === 0 };
}

function RuleFormView({ title, initial, ruleId }: { title: string; initial: RuleForm; ruleId: string | null }) {
  const { form, set, reset, problems, valid, id, problem, described, showProblems } = useFormFields<RuleForm>(initial, "rule", ruleProblems);
  const navigate = useNavigate();
  const save = useAction({
    mutationFn: (body: ReturnType<typeof ruleBody>) => ruleId ? q.alertRules.update.call({ ...body, id: ruleId, description: body.description ?? null }) : q.alertRules.create.call(body),
  }, {
    invalidates: [q.alertRules.key(), q.alerts.key()],
    success: (_, body) => (ruleId ? `Rule “${body.name}” saved` : `Rule “${body.name}” created`),
    onSuccess: () => navigate({ to: "/alerts/rules" }),
  });
  const canReadDevices = useCan("devices:read");
  const targets = useQuery(q.notificationTargets.list.options({ limit: 100, offset: 0 }));
  const scope = useScopeCount(form.selector);
  const watchesDevices = appliesToDevices(form.type);

  useEffect(() => reset(initial), [ruleId]); // eslint-disable-line react-hooks/exhaustive-deps

  const submit = save.submit(() => ruleBody(form), {
    valid,
    onInvalid: () => {
      showProblems();
      requestAnimationFrame(() => document.querySelector<HTMLElement>(".rule-form [aria-invalid='true']")?.focus());
    },
  });

  const durationField = (label: string, hint: string) => (
    <div className="field">
      <label htmlFor={id("duration")}>{label}</label>
      <input id={id("duration")} className="input" type="number" min={0} step={1} value={form.durationSeconds} onChange={(e) => set("durationSeconds", e.target.value)} {...described("durationSeconds")} />
      <span className="field__hint">{hint}</span>
      {problem("durationSeconds")}
    </div>
  );

  return (
    <>
      <PageHeader title={title} breadcrumb={<Link to="/alerts/rules">Alert rules</Link>} />
      <AlertsAreaNav />
      <form className="stack rule-form" onSubmit={submit} noValidate>
        <Card title="Rule">
          <div className="stack">
            <div className="field">
              <label htmlFor={id("name")}>Name</label>
              <input id={id("name")} className="input" value={form.name} maxLength={120} onChange={(e) => set("name", e.target.value)} {...described("name")} />
              {problem("name")}
            </div>
            <div className="field">
              <label htmlFor={id("description")}>Description <span className="faint">(optional)</span></label>
              <input id={id("description")} className="input" value={form.description} onChange={(e) => set("description", e.target.value)} {...described("description")} />
              {problem("description")}
            </div>
          </div>
        </Card>

        <Card title="Condition">
          <div className="stack">
            <div className="field narrow-field">
              <label htmlFor={id("type")}>Condition type</label>
              <select id={id("type")} className="select" value={form.type} onChange={(e) => {
                const type = e.target.value as ConditionType;
                // Each type's own default duration (the API's): 0 for a threshold's latest reading is a choice, 5 minutes offline.
                set("type", type);
                if (type === "device_offline" && form.type !== "device_offline") set("durationSeconds", "300");
              }}>
                {(Object.keys(CONDITION_LABEL) as ConditionType[]).map((t) => <option key={t} value={t}>{CONDITION_LABEL[t]}</option>)}
              </select>
            </div>
            {form.type === "metric_threshold" && (
              <>
                <div className="grid grid--3">
                  <div className="field">
                    <label htmlFor={id("metric")}>Metric</label>
                    <select id={id("metric")} className="select" value={form.metric} onChange={(e) => set("metric", e.target.value as MetricName)}>
                      {(Object.keys(METRIC_LABEL) as MetricName[]).map((m) => <option key={m} value={m}>{METRIC_LABEL[m]}</option>)}
                    </select>
                  </div>
                  <div className="field">
                    <label htmlFor={id("operator")}>Fires when it is</label>
                    <select id={id("operator")} className="select" value={form.operator} onChange={(e) => set("operator", e.target.value as Operator)}>
                      {(Object.keys(OPERATOR_LABEL) as Operator[]).map((o) => <option key={o} value={o}>{OPERATOR_LABEL[o]} ({o})</option>)}
                    </select>
                  </div>
                  <div className="field">
                    <label htmlFor={id("threshold")}>Threshold</label>
                    <input id={id("threshold")} className="input" type="number" step="any" value={form.threshold} onChange={(e) => set("threshold", e.target.value)} {...described("threshold")} />
                    {problem("threshold")}
                  </div>
                </div>
                {durationField("For at least (seconds)", "Every reading of this long must meet it; 0: the latest reading alone.")}
              </>
            )}
            {form.type === "device_offline" && durationField("Offline for at least (seconds)", "Counted from the last time the device was seen.")}
            {form.type === "certificate_expiring" && (
              <div className="field narrow-field">
                <label htmlFor={id("within-days")}>Expires within (days)</label>
                <input id={id("within-days")} className="input" type="number" min={1} max={3650} step={1} value={form.withinDays} onChange={(e) => set("withinDays", e.target.value)} {...described("withinDays")} />
                <span className="field__hint">The device's newest valid certificate; an expired one fires too.</span>
                {problem("withinDays")}
              </div>
            )}
            {form.type === "config_source_failing" && (
              <div className="field narrow-field">
                <label htmlFor={id("consecutive-failures")}>Failed syncs in a row</label>
                <input id={id("consecutive-failures")} className="input" type="number" min={1} max={100} step={1} value={form.consecutiveFailures} onChange={(e) => set("consecutiveFailures", e.target.value)} {...described("consecutiveFailures")} />
                <span className="field__hint">Syncs refused (a bad document, the prune guard) or failed (the repository unreachable) since the last applied one. Resolves when a sync applies again.</span>
                {problem("consecutiveFailures")}
              </div>
            )}
            {form.type === "deployment_failed" && <p className="muted">Fires for a device that reports a deployment failed (after its automatic retries), and resolves when it recovers, is rolled back or the deployment is removed.</p>}
          </div>
        </Card>

        {!watchesDevices ? (
          <Card title="Scope">
            <SourcePicker selected={form.sourceNames} onChange={(names) => set("sourceNames", names)} />
          </Card>
        ) : (
        <Card title="Scope">
          <div className="stack">
            <SelectorInput id={id("selector")} label="Devices whose labels match" value={form.selector} onChange={(selector) => set("selector", selector)} />
            {canReadDevices && (
              scope.error ? <ErrorBox error={scope.error} /> : scope.count === undefined ? (scope.loading && !problems.selector ? <Loading /> : null) : (
                <p aria-live="polite" className="scope-count">
                  {scope.every ? "No selector: every device, " : ""}<strong>{scope.count.toLocaleString()}</strong> {plural(scope.count, "device")} {scope.count === 1 ? "matches" : "match"} now.
                </p>
              )
            )}
          </div>
        </Card>
        )}

        <Card title="Notification">
          <div className="stack">
            <div className="grid grid--2">
              <div className="field">
                <label htmlFor={id("severity")}>Severity</label>
                <select id={id("severity")} className="select" value={form.severity} onChange={(e) => set("severity", e.target.value as Severity)}>
                  {SEVERITY_ORDER.map((s) => <option key={s} value={s}>{s}</option>)}
                </select>
              </div>
              <div className="field">
                <label htmlFor={id("cooldown")}>Cooldown (seconds)</label>
                <input id={id("cooldown")} className="input" type="number" min={0} step={1} value={form.cooldownSeconds} onChange={(e) => set("cooldownSeconds", e.target.value)} {...described("cooldownSeconds")} />
                <span className="field__hint">The least time between two firing notifications for one {watchesDevices ? "device" : "config source"}.</span>
                {problem("cooldownSeconds")}
              </div>
            </div>
            <fieldset className="target-checks">
              <legend>Notification targets</legend>
              {targets.isPending ? <Loading /> : targets.isError ? <ErrorBox error={targets.error} /> : targets.data.items.length === 0 ? (
                <p className="muted">No notification target yet: <Link to="/notification-targets">add a webhook or an e-mail target</Link>; the rule still raises alerts without one.</p>
              ) : targets.data.items.map((t) => (
                <label key={t.id} className="row">
                  <input
                    type="checkbox"
                    checked={form.targetIds.includes(t.id)}
                    onChange={(e) => set("targetIds", e.target.checked ? [...form.targetIds, t.id] : form.targetIds.filter((x) => x !== t.id))}
                  />
                  {t.name} <span className="faint">({t.type}{t.enabled ? "" : ", disabled"})</span>
                </label>
              ))}
              {problem("targetIds")}
            </fieldset>
            <label className="row"><input type="checkbox" checked={form.enabled} onChange={(e) => set("enabled", e.target.checked)} /> Enabled (evaluated on the schedule)</label>
          </div>
        </Card>

        <FormFooter action={save} inline={false} submitLabel={ruleId ? "Save changes" : "Create rule"}>
          <Link to="/alerts/rules" className="btn">Cancel</Link>
        </FormFooter>
      </form>
    </>
  );
}

/** The config sources a rule watches, by name; none picked: every source of the organization. */
function SourcePicker({ selected, onChange }: { selected: string[]; onChange: (names: string[]) => void }) {
  const session = useSession();
  const sources = useQuery(q.config.sourcesList.options({ orgId: session.organization.id }));
  const names = sources.data?.items.map((s) => s.name) ?? [];
  // a name the rule holds that is no longer a source stays listed, so it can be unticked
  const listed = [...names, ...selected.filter((n) => !names.includes(n))];
  return (
    <fieldset className="target-checks">
      <legend>Config sources watched</legend>
      <p className="muted">{selected.length === 0 ? "None picked: every config source of the organization, now and later." : `Only the ${plural(selected.length, "source")} picked.`}</p>
      {sources.isPending ? <Loading /> : sources.isError ? (
        <p className="muted">Your role cannot list the config sources; the rule watches {selected.length === 0 ? "every source" : selected.join(", ")}.</p>
      ) : listed.length === 0 ? (
        <p className="muted">No config source yet: <Link to="/config">add one</Link>; the rule watches every source added later.</p>
      ) : listed.map((name) => (
        <label key={name} className="row">
          <input type="checkbox" checked={selected.includes(name)} onChange={(e) => onChange(e.target.checked ? [...selected, name] : selected.filter((n) => n !== name))} />
          {name}
        </label>
      ))}
    </fieldset>
  );
}
