// A deployment's devices by state as the segments of one progress bar: running, failed, in
// flight and waiting, out of the devices that take part (skipped, cancelled, superseded and
// removed ones do not).
import { counted } from "../../../src/lib/plural";
import type { Deployment, Progress } from "./types";

export interface ProgressSegment {
  key: "running" | "failed" | "active" | "waiting";
  label: string;
  value: number;
}

export function progressSegments(p: Progress): { segments: ProgressSegment[]; total: number; summary: string } {
  const running = p.running;
  const failed = p.failed;
  const active = p.downloading + p.installing + p.removing;
  const waiting = p.pending + p.waiting_to_retry + p.waiting_for_window + p.waiting_for_budget;
  const total = running + failed + active + waiting;
  const segments: ProgressSegment[] = [
    { key: "running", label: "running", value: running },
    { key: "failed", label: "failed", value: failed },
    { key: "active", label: "installing", value: active },
    { key: "waiting", label: "waiting", value: waiting },
  ];
  const summary = total === 0 ? "no devices yet" : segments.filter((s) => s.value > 0).map((s) => `${s.value} ${s.label}`).join(", ");
  return { segments, total, summary };
}

/**
 * The progress column's words, in the terms of the deployment's state: a draft has not started;
 * a stopping, stopped or deleting one counts the removals its devices confirmed (a deployment
 * that ran on 44 devices and was stopped is "removed from 44 of 44 devices", never "not
 * started"); any other counts running and failed devices.
 */
export function progressText(d: Pick<Deployment, "state" | "progress">): string {
  const p = d.progress;
  if (d.state === "draft" || d.state === "scheduled") return "not started";
  // devices that had it (or were told to): not those it skipped, cancelled or another deployment took over
  const had = p.total - p.skipped - p.cancelled - p.superseded;
  if (d.state === "stopped") return had === 0 ? "ran on no device" : `removed from ${p.removed} of ${counted(had, "device")}`;
  if (d.state === "stopping" || d.state === "deleting") return `${p.removed} of ${counted(had, "device")} confirmed the removal`;
  const { total } = progressSegments(p);
  if (total === 0) return "no device runs it";
  return `${p.running}/${total} running${p.failed ? ` · ${p.failed} failed` : ""}`;
}
