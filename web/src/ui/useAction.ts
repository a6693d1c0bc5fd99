// A write: TanStack Query's useMutation over a procedure's `q.x.y.mutation()`, with the console's
// rules in one place. Busy (`isPending`) until the call and the invalidation of what it changed
// are done (the MutationCache in app/query-client.ts awaits `meta.invalidates`), so a dialog
// closes onto a fresh list; the API's refusal is kept in `error` for the form's FormFooter (the
// dialog stays open), or, with `failure`, said in a toast (row actions); a refusal about a field
// can be split onto the field (`fieldOf`); `success` says what happened in a toast.
import { useMutation, type QueryKey } from "@tanstack/react-query";
import type { FormEvent } from "react";
import { splitRefusal, type FieldOf } from "../api/client";
import { useToast } from "./toast";

type Said<I, O> = string | ((output: O, input: I) => string);

export interface ActionOptions<I, O> {
  /** key prefixes to invalidate after success (busy until they are fresh) */
  invalidates?: QueryKey[];
  /** a toast after success; say it from the input or output (the page has already re-read what changed) */
  success?: Said<I, O>;
  /** a failure goes to a toast with this prefix instead of `error` (row actions) */
  failure?: string | ((input: I) => string);
  /** after success (and invalidation): close the dialog, show the result */
  onSuccess?: (output: O, input: I) => unknown;
  /** names the field a 400/409 refusal is about; those go to `fieldErrors`, the rest to `error` */
  fieldOf?: FieldOf;
}

export interface Action<I, O = unknown> {
  isPending: boolean;
  /** the input of the call under way (which row is busy) */
  pendingInput: I | undefined;
  /** the refusal to show in the form (null: none) */
  error: unknown;
  fieldErrors: Record<string, string>;
  /** forget the last refusal (a dialog opened again) */
  reset: () => void;
  /** runs the call; resolves true on success, false on a refusal (which is kept, never thrown) */
  run: (input: I) => Promise<boolean>;
  /** a form's onSubmit: builds the input and runs it, unless `valid` is false */
  submit: (build: () => I, opts?: { valid?: boolean; onInvalid?: () => void }) => (event: FormEvent) => void;
}

export function useAction<I = void, O = unknown>(mutation: { mutationKey?: QueryKey; mutationFn: (input: I) => Promise<O> }, options: ActionOptions<I, O> = {}): Action<I, O> {
  const toast = useToast();
  const m = useMutation<O, unknown, I>({
    ...mutation,
    meta: options.invalidates ? { invalidates: options.invalidates } : undefined,
    onSuccess: async (output, input) => {
      const said = typeof options.success === "function" ? options.success(output, input) : options.success;
      if (said) toast.success(said);
      await options.onSuccess?.(output, input);
    },
    onError: (err, input) => {
      if (options.failure !== undefined) toast.error(err, typeof options.failure === "function" ? options.failure(input) : options.failure);
    },
  });
  const split = m.error != null && options.failure === undefined
    ? options.fieldOf ? splitRefusal(m.error, options.fieldOf) : { fields: {}, rest: m.error }
    : { fields: {}, rest: null };
  const run = (input: I) => m.mutateAsync(input).then(() => true, () => false);
  return {
    isPending: m.isPending,
    pendingInput: m.isPending ? m.variables : undefined,
    error: split.rest,
    fieldErrors: split.fields,
    reset: m.reset,
    run,
    submit: (build, opts = {}) => (event) => {
      event.preventDefault();
      if (opts.valid === false) {
        opts.onInvalid?.();
        return;
      }
      void run(build());
    },
  };
}
