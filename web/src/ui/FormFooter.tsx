// The end of every form: the API's refusal (the form stays open), then Cancel and the submit
// button, which is busy while the action runs and cannot be pressed twice.
import type { ReactNode } from "react";
import { Button } from "./Button";
import { ErrorBox } from "./states";

export function FormFooter({ action, submitLabel, onCancel, cancelLabel = "Cancel", disabled, variant = "primary", icon, inline = true, className, children }: {
  action: { isPending: boolean; error: unknown };
  submitLabel: ReactNode;
  /** no Cancel button without it (a page's form) */
  onCancel?: () => void;
  cancelLabel?: string;
  /** the submit cannot be pressed (a problem to fix first) */
  disabled?: boolean;
  variant?: "primary" | "danger";
  icon?: ReactNode;
  /** the footer inside a dialog's body (default) or a page form's plain row */
  inline?: boolean;
  /** the buttons' row's own class instead */
  className?: string;
  /** more buttons before Cancel */
  children?: ReactNode;
}) {
  return (
    <>
      {action.error != null && <ErrorBox error={action.error} />}
      <div className={className ?? (inline ? "dialog__footer dialog__footer--inline" : "row")}>
        {children}
        {onCancel && <Button onClick={onCancel} disabled={action.isPending}>{cancelLabel}</Button>}
        <Button type="submit" variant={variant} icon={icon} busy={action.isPending} disabled={disabled}>{submitLabel}</Button>
      </div>
    </>
  );
}
