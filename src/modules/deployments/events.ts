// Deployment events on the event bus (src/lib/events.ts), forwarded by the realtime channel
// ("deployments"). They are collected while a transaction runs and published once it committed.
import { eventBusOf, type FleetEvents } from "../../lib/events.js";

interface DeploymentEventBase {
  organizationId: string;
  deploymentId: string;
  /** ISO 8601 time of the change */
  at: string;
}

declare module "../../lib/events.js" {
  interface FleetEvents {
    "deployment.status_changed": DeploymentEventBase & { from: string; to: string };
    "deployment.progress": DeploymentEventBase & { deviceId: string; state: string; message: string | null };
    "rollout.state_changed": DeploymentEventBase & { from: string; to: string; currentBatch: number | null; reason: string | null };
  }
}

type DeploymentEventName = "deployment.status_changed" | "deployment.progress" | "rollout.state_changed";
/** An event waiting for its transaction to commit; `at` is set when it is published. */
type Pending = { [K in DeploymentEventName]: { name: K; payload: Omit<FleetEvents[K], "at"> } }[DeploymentEventName];

/** Events of one transaction, published by `publishTo` after it committed. */
export class DeploymentEvents {
  private readonly pending: Pending[] = [];

  statusChanged(organizationId: string, deploymentId: string, from: string, to: string): void {
    if (from !== to) this.pending.push({ name: "deployment.status_changed", payload: { organizationId, deploymentId, from, to } });
  }

  rolloutChanged(organizationId: string, deploymentId: string, from: string, to: string, currentBatch: number | null, reason: string | null): void {
    if (from !== to) this.pending.push({ name: "rollout.state_changed", payload: { organizationId, deploymentId, from, to, currentBatch, reason } });
  }

  progress(organizationId: string, deploymentId: string, deviceId: string, state: string, message: string | null): void {
    this.pending.push({ name: "deployment.progress", payload: { organizationId, deploymentId, deviceId, state, message } });
  }

  publishTo(owner: object): void {
    const bus = eventBusOf(owner);
    const at = new Date().toISOString();
    for (const event of this.pending.splice(0)) bus.publish(event.name, { ...event.payload, at } as never);
  }
}

/** Events of a move made in a procedure: published once its transaction committed. */
export function eventsOf(ctx: { services: object; afterCommit: (effect: () => void) => void }): DeploymentEvents {
  const events = new DeploymentEvents();
  ctx.afterCommit(() => events.publishTo(ctx.services));
  return events;
}
