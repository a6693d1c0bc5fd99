import { useState } from "react";
import { Check, Copy } from "lucide-react";
import { Button } from "./Button";

/** Copies a value (a new token, a command) and says so. */
export function CopyButton({ value, label = "Copy" }: { value: string; label?: string }) {
  const [copied, setCopied] = useState(false);
  async function copy() {
    try {
      await navigator.clipboard.writeText(value);
    } catch {
      // Clipboard refused (plain HTTP on another host): select-and-copy by hand still works.
      return;
    }
    setCopied(true);
    window.setTimeout(() => setCopied(false), 2000);
  }
  return (
    <Button size="small" icon={copied ? <Check /> : <Copy />} onClick={copy} aria-label={copied ? "Copied" : label}>
      {copied ? "Copied" : label}
    </Button>
  );
}
