// A simulated device's configuration (src/simulator/virtual-configuration.ts): a full revision
// is reported applied with the next heartbeat, once, then at least every 10th heartbeat; an
// answer that is not full changes nothing it holds.
import { describe, expect, it } from "vitest";
import { VirtualConfiguration } from "../../../src/simulator/virtual-configuration.js";

const R1 = "1".repeat(64);
const R2 = "2".repeat(64);

/** one heartbeat: the report out (taken), the answer in */
function heartbeat(device: VirtualConfiguration, answer?: unknown) {
  const report = device.pendingReport();
  device.acknowledge(report);
  device.apply(answer);
  return report;
}

describe("a simulated device's configuration", () => {
  it("reports a full revision applied once, then every 10th heartbeat, and the next revision at once", () => {
    const device = new VirtualConfiguration();
    expect(heartbeat(device)).toBeUndefined();
    expect(heartbeat(device, { revision: R1, full: true, files: [] })).toBeUndefined();
    expect(heartbeat(device, { revision: R1, full: false })).toEqual({ revision: R1, state: "applied", appliedRevision: R1, drift: [] });
    for (let i = 0; i < 9; i++) expect(heartbeat(device, { revision: R1, full: false })).toBeUndefined();
    expect(heartbeat(device, { revision: R1, full: false })).toMatchObject({ revision: R1 });
    heartbeat(device, { revision: R2, full: true, files: [] });
    expect(heartbeat(device, { revision: R2, full: false })).toMatchObject({ revision: R2, state: "applied" });
    // an answer not in full for a revision it does not hold: it says what it holds, and takes nothing
    heartbeat(device, { revision: R1, full: false });
    expect(device.applied).toBe(R2);
    expect(heartbeat(device, undefined)).toMatchObject({ revision: R2 });
  });
});
