// Simulated devices that run the device actions they are handed (docs/actions.md), through the
// agent protocol: the first heartbeat takes what the service hands over, the second reports
// each one ended in `state` (succeeded, or failed with a message). For console and CLI tests.
import { expect } from "vitest";
import type { VirtualDevice } from "../../src/simulator/virtual-device.js";

export async function runHandedActions(devices: VirtualDevice[], state: "succeeded" | "failed" = "succeeded"): Promise<number> {
  let ran = 0;
  for (const device of devices) {
    let reports: Array<{ id: string; state: string; message?: string }> = [];
    const exchange = {
      pendingReports: () => reports,
      acknowledge: () => { reports = []; },
      apply: (entries: never[]) => {
        for (const a of entries as Array<{ id: string }>) reports.push({ id: a.id, state, ...(state === "failed" ? { message: "simulated failure" } : {}) });
        ran += entries.length;
      },
    };
    for (let i = 0; i < 2; i++) {
      const { response } = await device.exchangeHeartbeat(device.deployments, { status: "online" }, exchange);
      expect(response.status).toBe(200);
    }
  }
  return ran;
}
