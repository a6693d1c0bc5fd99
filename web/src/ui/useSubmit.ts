// A form's submission: busy while the API works (the submit button shows it and cannot be
// pressed twice), and the API's refusal kept to be shown in the form, which stays open.
import { useState, type FormEvent } from "react";

export function useSubmit<V>(action: (value: V) => Promise<unknown>) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  return {
    busy,
    error,
    /** forget the last refusal (a dialog opened again) */
    clear: () => setError(null),
    /** a form's onSubmit: runs `action(value)` unless `ready` is false */
    submit: (value: V, ready = true) => async (event: FormEvent) => {
      event.preventDefault();
      if (!ready) return;
      setBusy(true);
      setError(null);
      try {
        await action(value);
      } catch (err) {
        setError(err);
      } finally {
        setBusy(false);
      }
    },
  };
}
