// The device simulator: virtual devices speaking the real agent protocol (docs/devices.md).
export { FleetSimulator, type SimulatorOptions, type SimulatorStats } from "./engine.js";
export { VirtualDevice, type EnrollAnswer, type HeartbeatAnswer } from "./virtual-device.js";
export { VirtualSystem, type SystemUpdateBehaviour } from "./virtual-system.js";
export { JsonClient, type JsonResponse } from "../../agent/src/core/json-client.js";
export { createCsr, generateDeviceKeys, signDeviceToken, x5tS256, type DeviceKeyAlgorithm, type DeviceKeys } from "../../agent/src/core/identity.js";
export { LatencyRecorder, closedLoop } from "./latency.js";
export { parseDuration, parseDelayRange, parseSimulatorArgs, formatProgress, deploymentsLine } from "./cli.js";
export {
  DeploymentAgent, type AgentDeploymentState, type DeploymentReport, type DesiredDeploymentEntry, type LocalDeployment,
} from "../../agent/src/core/deployments.js";
export {
  VirtualRuntime, virtualDeploymentAgent, DEFAULT_DEPLOYMENT_TIMINGS, type DeploymentAgentOptions, type DeploymentTimings, type DelayRange,
} from "./virtual-runtime.js";
