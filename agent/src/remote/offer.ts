// What the service offers the device (docs/remote-access.md, "Device side", the contract), and
// what a handler of one kind is given.
import type { RemoteAccessConfig } from "./config.js";
import type { DeviceLeg } from "./leg.js";
import type { SessionProcesses } from "./processes.js";

export type RemoteKind = "shell" | "exec" | "port-forward" | "file-read" | "file-write";
export const KINDS: RemoteKind[] = ["shell", "exec", "port-forward", "file-read", "file-write"];

export interface Offer {
  sessionId: string;
  /** port-forward: one offer per TCP connection */
  connectionId?: string | null;
  kind: RemoteKind;
  /** the one-use device-leg token */
  token: string;
  expiresAt?: string | null;
  command?: string[] | null;
  tty?: boolean | null;
  cols?: number | null;
  rows?: number | null;
  timeoutSeconds?: number | null;
  target?: { host?: string | null; port: number } | null;
  path?: string | null;
  size?: number | null;
  mode?: number | string | null;
  sha256?: string | null;
  /** who opened the session (the service's { id, email, name }) */
  user?: unknown;
  reason?: string | null;
  /** where the device's leg joins (the service's path; the agent builds the same from sessionId and token) */
  streamUrl?: string | null;
}

export interface SessionContext {
  config: RemoteAccessConfig;
  processes: SessionProcesses;
  log: (level: "info" | "warn" | "error", message: string) => void;
}

/** Either the device says no (the reason goes to the user), or it joins and `run` serves the stream until it ends. */
export type Prepared = { refuse: string } | { run: (leg: DeviceLeg) => Promise<void> };

export function refuse(reason: string): Prepared {
  return { refuse: reason };
}

/** The offer's identity: a port-forward session has one offer per connection. */
export function offerKey(offer: Pick<Offer, "sessionId" | "connectionId">): string {
  return offer.connectionId ? `${offer.sessionId}/${offer.connectionId}` : offer.sessionId;
}
