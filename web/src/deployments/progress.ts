// A deployment's devices by state as the segments of one progress bar: running, failed, in
// flight and waiting, out of the devices that take part (skipped, cancelled, superseded and
// removed ones do not).
import type { Progress } from "./types";

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
