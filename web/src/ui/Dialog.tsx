// Dialogs on the native <dialog> element: showModal() gives the focus trap, Escape, the
// backdrop and inertness of the page behind, with the accessible name from its heading.
import { useEffect, useId, useRef, useState, type ReactNode } from "react";
import { Button } from "./Button";
import { ErrorBox } from "./states";

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
 * message.
 */
export function ConfirmDialog({ open, onClose, title, children, confirmLabel, onConfirm, danger = true }: {
  open: boolean;
  onClose: () => void;
  title: string;
  children: ReactNode;
  confirmLabel: string;
  onConfirm: () => Promise<unknown> | unknown;
  danger?: boolean;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    if (open) setError(null);
  }, [open]);
  async function confirm() {
    setBusy(true);
    setError(null);
    try {
      await onConfirm();
      onClose();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }
  return (
    <Dialog
      open={open}
      onClose={onClose}
      title={title}
      footer={
        <>
          <Button onClick={onClose} disabled={busy}>Cancel</Button>
          <Button variant={danger ? "danger" : "primary"} onClick={confirm} busy={busy}>{confirmLabel}</Button>
        </>
      }
    >
      {children}
      {error != null && <ErrorBox error={error} />}
    </Dialog>
  );
}
