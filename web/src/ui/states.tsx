// Loading, empty, error and forbidden: every page shows each the same way. Errors carry the
// API's own message and the request id, so that a report can be matched to the server's log.
import type { ReactNode } from "react";
import { AlertTriangle, Inbox, Lock, RotateCw } from "lucide-react";
import { messageOf, requestIdOf, statusOf } from "../api/client";
import { Button } from "./Button";

export function Loading({ label = "Loading" }: { label?: string }) {
  return (
    <div className="state" role="status" aria-live="polite">
      <span className="spinner" aria-hidden="true" />
      <span>{label}…</span>
    </div>
  );
}

export function Empty({ title, children, action }: { title: string; children?: ReactNode; action?: ReactNode }) {
  return (
    <div className="state">
      <Inbox aria-hidden="true" />
      <h3>{title}</h3>
      {children && <div>{children}</div>}
      {action}
    </div>
  );
}

export function Forbidden({ what }: { what: string }) {
  return (
    <div className="state">
      <Lock aria-hidden="true" />
      <h3>You cannot see {what}</h3>
      <p>Your role in this organization does not include this permission. An administrator can change your role.</p>
    </div>
  );
}

/** A failed request: the API's message and request id, and a retry. 403 reads as forbidden. */
export function ErrorState({ error, retry, what, action }: { error: unknown; retry?: () => void; what?: string; action?: ReactNode }) {
  if (statusOf(error) === 403 && what) return <Forbidden what={what} />;
  const requestId = requestIdOf(error);
  return (
    <div className="state state--error" role="alert">
      <AlertTriangle aria-hidden="true" />
      <h3>{statusOf(error) === 404 ? "Not found" : "Something went wrong"}</h3>
      <p className="muted">{messageOf(error)}</p>
      {requestId && <span className="request-id">request id {requestId}</span>}
      {retry && (
        <Button size="small" icon={<RotateCw />} onClick={retry}>
          Try again
        </Button>
      )}
      {action}
    </div>
  );
}

/** An inline error under a form or above a table. */
export function ErrorBox({ error }: { error: unknown }) {
  const requestId = requestIdOf(error);
  return (
    <div className="alert-box alert-box--error" role="alert">
      <AlertTriangle aria-hidden="true" />
      <div>
        <p>{messageOf(error)}</p>
        {requestId && <span className="request-id">request id {requestId}</span>}
      </div>
    </div>
  );
}
