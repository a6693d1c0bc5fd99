import type { ButtonHTMLAttributes, ReactNode } from "react";

type Variant = "primary" | "secondary" | "danger" | "ghost";

export interface ButtonProps extends ButtonHTMLAttributes<HTMLButtonElement> {
  variant?: Variant;
  size?: "normal" | "small";
  icon?: ReactNode;
  /** shows a spinner and disables the button while work is under way */
  busy?: boolean;
}

export function Button({ variant = "secondary", size = "normal", icon, busy, children, className, disabled, type = "button", ...rest }: ButtonProps) {
  const classes = ["btn", variant !== "secondary" && `btn--${variant}`, size === "small" && "btn--small", !children && "btn--icon", className]
    .filter(Boolean)
    .join(" ");
  return (
    <button type={type} className={classes} disabled={disabled || busy} aria-busy={busy || undefined} {...rest}>
      {busy ? <span className="spinner" aria-hidden="true" style={{ width: 14, height: 14 }} /> : icon}
      {children}
    </button>
  );
}
