// How the agent carries out device actions on this machine (docs/actions.md, "On the device"):
// the reboot command, where the boot id is read, where applications put their leases.
export interface ActionSettings {
  /** run through `sh -c`; default `systemctl reboot` (the system's own means) */
  rebootCommand: string;
  /** changes with every boot: a reboot is reported done once it changed */
  bootIdFile: string;
  /** one file per lease: `<name>.json` holding `{ "until": "<ISO time>", "reason": "..." }` */
  leaseDir: string;
  /** the longest a lease holds from when its file was written, whatever its `until` says */
  leaseMaxSeconds: number;
}

export function actionSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): ActionSettings {
  const max = Number(env.FLEET_AGENT_LEASE_MAX_SECONDS);
  return {
    rebootCommand: env.FLEET_AGENT_REBOOT_COMMAND || "systemctl reboot",
    bootIdFile: env.FLEET_AGENT_BOOT_ID_FILE || "/proc/sys/kernel/random/boot_id",
    leaseDir: env.FLEET_AGENT_LEASE_DIR || "/run/fleet-agent/leases",
    leaseMaxSeconds: Number.isInteger(max) && max > 0 ? max : 3600,
  };
}
