// What the jobs' tests share: enrolled devices' heartbeats, and which actions they were handed.
import { expect } from "vitest";
import type { Harness } from "../../support/harness.js";
import { heartbeat, type EnrolledDevice } from "../agent/fleet-support.js";

export type Handed = Array<{ id: string; kind: string }>;

/** One heartbeat (with action reports when given): the actions it was handed. */
export async function beat(h: Harness, device: EnrolledDevice, actions?: unknown[]): Promise<Handed> {
  const res = await heartbeat(h, device, actions ? { actions } : {});
  expect(res.status, res.text).toBe(200);
  return (res.body.actions ?? []) as Handed;
}

/** Every device's heartbeat once: which devices were handed which action. */
export async function beatAll(h: Harness, devices: EnrolledDevice[]): Promise<Map<EnrolledDevice, Handed>> {
  const handed = new Map<EnrolledDevice, Handed>();
  for (const d of devices) {
    const actions = await beat(h, d);
    if (actions.length) handed.set(d, actions);
  }
  return handed;
}
