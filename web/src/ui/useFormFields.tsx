// A form's values as typed, with each field's problem shown next to it once the field was
// touched (or every one after a refused submit): the id, aria-invalid and aria-describedby
// wiring that the tests and assistive technology find fields and their problems by.
import { useState, type ReactNode } from "react";

export function useFormFields<F extends object>(initial: F, idPrefix: string, check: (form: F) => Partial<Record<keyof F, string>>) {
  const [form, setForm] = useState<F>(initial);
  const [touched, setTouched] = useState<Set<keyof F>>(new Set());
  const [showAll, setShowAll] = useState(false);
  const problems = check(form);
  const shown = (field: keyof F) => (showAll || touched.has(field)) && !!problems[field];
  const id = (field: string) => `${idPrefix}-${field}`;
  return {
    form,
    problems,
    valid: Object.keys(problems).length === 0,
    id,
    set<K extends keyof F>(key: K, value: F[K]) {
      setForm((f) => ({ ...f, [key]: value }));
      setTouched((t) => new Set(t).add(key));
    },
    /** back to `next` with nothing touched (a dialog opened again) */
    reset(next: F) {
      setForm(next);
      setTouched(new Set());
      setShowAll(false);
    },
    /** after a refused submit: every problem is shown */
    showProblems: () => setShowAll(true),
    problem: (field: keyof F & string): ReactNode => (shown(field) ? <span className="field__error" id={id(`${field}-error`)}>{problems[field]}</span> : null),
    described: (field: keyof F & string) => (shown(field) ? { "aria-invalid": true, "aria-describedby": id(`${field}-error`) } : {}),
  };
}
