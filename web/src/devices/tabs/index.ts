// The tabs of a device's page, each loaded when first opened (the telemetry charts bring
// uPlot along, which no other page needs). A tab not listed here is not offered.
import { lazy, type ComponentType } from "react";
import type { DeviceTab } from "../search";
import type { Device } from "../types";

export type DeviceTabPanel = ComponentType<{ device: Device }>;

export const DEVICE_TAB_PANELS: Partial<Record<DeviceTab, DeviceTabPanel>> = {
  telemetry: lazy(() => import("./TelemetryTab").then((m) => ({ default: m.TelemetryTab }))),
  logs: lazy(() => import("./LogsTab").then((m) => ({ default: m.LogsTab }))),
  activity: lazy(() => import("./ActivityTab").then((m) => ({ default: m.ActivityTab }))),
  certificates: lazy(() => import("./CertificatesTab").then((m) => ({ default: m.CertificatesTab }))),
  deployments: lazy(() => import("./DeploymentsTab").then((m) => ({ default: m.DeploymentsTab }))),
  configuration: lazy(() => import("./ConfigurationTab").then((m) => ({ default: m.ConfigurationTab }))),
  // xterm.js comes with these two only (docs/remote-access.md, "The console's terminal")
  terminal: lazy(() => import("./TerminalTab").then((m) => ({ default: m.TerminalTab }))),
  sessions: lazy(() => import("./SessionsTab").then((m) => ({ default: m.SessionsTab }))),
};
