// A link to a deployment's own page (the rollout page, web/src/deployments/rollout), which
// registers its route itself: navigated inside the console, by its address.
import type { ReactNode } from "react";
import { useNavigate } from "@tanstack/react-router";

export function deploymentHref(id: string): string {
  return `/deployments/${encodeURIComponent(id)}`;
}

export function DeploymentLink({ id, children }: { id: string; children: ReactNode }) {
  const navigate = useNavigate();
  const href = deploymentHref(id);
  return (
    <a
      href={href}
      onClick={(e) => {
        if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        void navigate({ href });
      }}
    >
      {children}
    </a>
  );
}
