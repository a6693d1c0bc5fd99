// The device's effective configuration (config-layers/EffectiveConfig.tsx): each value with the
// layer@revision it came from, whether the device applied it, drift and Restore. Offered only
// to those who may read configuration; others see why.
import { useCan } from "../../app/session";
import { Card } from "../../ui/Card";
import { Forbidden } from "../../ui/states";
import { EffectiveConfig } from "../../config-layers/EffectiveConfig";
import type { Device } from "../types";

export function ConfigurationTab({ device }: { device: Device }) {
  if (!useCan("config:read")) return <Card><Forbidden what="the device's configuration" /></Card>;
  return <EffectiveConfig deviceId={device.id} />;
}
