// Dialogs on the native <dialog> element: showModal() gives the focus trap, Escape, the
// backdrop and inertness of the page behind, with the accessible name from its heading.
import { useEffect, useId, useRef, type ReactNode } from "react";
import { Button } from "./Button";
import { ErrorBox } from "./states";
import { useAction, type Action } from "./useAction";

export function Dialog({ open, onClose, title, children, footer, wide }: {
  open: boolean;
  onClose: () => void;
  title: string;
  children: ReactNode;
  footer?: ReactNode;
  /** room for a form with many choices (the permission picker) */
  wide?: boolean;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) dialog.showModal();
    if (!open && dialog.open) dialog.close();
  }, [open]);
  return (
    <dialog ref={ref} className={wide ? "dialog dialog--wide" : "dialog"} aria-labelledby={titleId} onClose={onClose} onCancel={onClose}>
      {open && (
        <>
          <div className="dialog__header">
            <h2 id={titleId}>{title}</h2>
          </div>
          <div className="dialog__body">{children}</div>
          {footer && <div className="dialog__footer">{footer}</div>}
        </>
      )}
    </dialog>
  );
}

/**
 * A destructive or consequential action asks first and says what will happen. The confirm
 * button names the action ("Delete 3 devices"); a failure stays in the dialog with the API's
 * message. The action is a `useAction` (with its invalidation and toast), or `onConfirm`.
 */
export function ConfirmDialog({ open, onClose, title, children, confirmLabel, onConfirm, action, danger = true, confirmable = true }: {
  open: boolean;
  onClose: () => void;
  title: string;
  children: ReactNode;
  confirmLabel: string;
  onConfirm?: () => Promise<unknown> | unknown;
  /** runs on confirm (input-less: bind the input in its mutationFn); closes the dialog on success */
  action?: Action<void, unknown>;
  danger?: boolean;
  /** false: it cannot be done now (the body says why); no confirm button, Cancel reads Close */
  confirmable?: boolean;
}) {
  const own = useAction<void, unknown>({ mutationFn: async () => onConfirm?.() });
  const run = action ?? own;
  const { reset } = run;
  useEffect(() => {
    if (open) reset();
  }, [open, reset]);
  return (
    <Dialog
      open={open}
      onClose={onClose}
      title={title}
      footer={
        <>
          <Button onClick={onClose} disabled={run.isPending}>{confirmable ? "Cancel" : "Close"}</Button>
          {confirmable && <Button variant={danger ? "danger" : "primary"} onClick={async () => (await run.run()) && onClose()} busy={run.isPending}>{confirmLabel}</Button>}
        </>
      }
    >
      {children}
      {run.error != null && <ErrorBox error={run.error} />}
    </Dialog>
  );
}
