// The notification target form (text as typed), its problems in the API's words, and the
// bodies it sends. A stored URL and secret never come back: on edit their fields start empty,
// and empty keeps what is stored. target-form.test.ts checks the problems against the API's
// schema (createTargetInput).
import type { RouterInputs, RouterOutputs } from "../api/client";

export type Target = RouterOutputs["notificationTargets"]["get"];
export type TargetType = Target["type"];
type CreateTargetInput = RouterInputs["notificationTargets"]["create"];
type UpdateTargetInput = RouterInputs["notificationTargets"]["update"];

export const TYPE_LABEL: Record<TargetType, string> = { webhook: "Webhook", slack: "Slack-compatible webhook", email: "E-mail" };

export interface TargetForm {
  name: string;
  type: TargetType;
  url: string;
  secret: string;
  /** one address per line or comma-separated */
  recipients: string;
  enabled: boolean;
}

export const EMPTY_TARGET: TargetForm = { name: "", type: "webhook", url: "", secret: "", recipients: "", enabled: true };

export function formOfTarget(target: Target): TargetForm {
  return { name: target.name, type: target.type, url: "", secret: "", recipients: target.recipients.join("\n"), enabled: target.enabled };
}

export function recipientList(text: string): string[] {
  return [...new Set(text.split(/[\s,;]+/).map((r) => r.trim()).filter(Boolean))];
}

// The shape of an address the API's z.email() accepts (its default pattern, simplified to what people type).
const EMAIL = /^(?!\.)(?!.*\.\.)([A-Za-z0-9_'+\-.]*)[A-Za-z0-9_+-]@([A-Za-z0-9][A-Za-z0-9-]*\.)+[A-Za-z]{2,}$/;

function urlProblem(text: string): string | null {
  try {
    const url = new URL(text);
    if (url.protocol !== "http:" && url.protocol !== "https:") return "must be an http(s) URL";
    return null;
  } catch {
    return "must be a URL such as https://hooks.example.com/alerts";
  }
}

export function targetProblems(form: TargetForm, editing: boolean): Partial<Record<keyof TargetForm, string>> {
  const problems: Partial<Record<keyof TargetForm, string>> = {};
  if (form.name.trim() === "") problems.name = "a name is required";
  else if (form.name.trim().length > 100) problems.name = "at most 100 characters";
  if (form.type !== "email") {
    if (form.url.trim() === "") {
      if (!editing) problems.url = `a ${form.type} target needs a url`;
    } else {
      const p = urlProblem(form.url.trim());
      if (p) problems.url = p;
      else if (form.url.trim().length > 2000) problems.url = "at most 2000 characters";
    }
  }
  if (form.type === "webhook" && form.secret !== "" && (form.secret.length < 16 || form.secret.length > 256)) problems.secret = "16 to 256 characters";
  if (form.type === "email") {
    const list = recipientList(form.recipients);
    const bad = list.find((r) => !EMAIL.test(r) || r.length > 254);
    if (list.length === 0) problems.recipients = "an email target needs recipients";
    else if (bad) problems.recipients = `not an e-mail address: ${bad}`;
    else if (list.length > 20) problems.recipients = "at most 20 recipients";
  }
  return problems;
}

export function createBody(form: TargetForm): CreateTargetInput {
  return {
    name: form.name.trim(),
    type: form.type,
    enabled: form.enabled,
    ...(form.type !== "email" ? { url: form.url.trim() } : { recipients: recipientList(form.recipients) }),
    ...(form.type === "webhook" && form.secret ? { secret: form.secret } : {}),
  };
}

/** Only what may change; an empty URL or secret keeps the stored one. */
export function updateBody(id: string, form: TargetForm): UpdateTargetInput {
  return {
    id,
    name: form.name.trim(),
    enabled: form.enabled,
    ...(form.type !== "email" && form.url.trim() ? { url: form.url.trim() } : {}),
    ...(form.type === "email" ? { recipients: recipientList(form.recipients) } : {}),
    ...(form.type === "webhook" && form.secret ? { secret: form.secret } : {}),
  };
}
