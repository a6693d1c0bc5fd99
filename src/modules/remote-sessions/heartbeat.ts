// What the heartbeat says about remote access (docs/remote-access.md, "Device side"): a part
// of the heartbeat's one statement, and its answer. While remote access is off for the
// organization the statement reads only the organization's row it already looks up by its
// key; while on, one indexed EXISTS on the device's waiting streams (and the device's labels
// when the policy has a selector). The offers themselves are read only when one waits.
import type { Services } from "../../services.js";
import type { Offer } from "./schemas.js";
import { pendingOffers } from "./offers.js";
import { matchesSelector } from "./settings.js";

export interface RemoteAccessFlags {
  selector: string | null;
  labels: unknown;
  pending: boolean;
}

/** Per heartbeat row `u` (of upd: u."id", u."organizationId"): null when off, else RemoteAccessFlags as jsonb. */
export const REMOTE_ACCESS_SQL = `(
  SELECT CASE WHEN jsonb_typeof(o."settings"->'remoteAccess'->'enabled') = 'boolean' AND (o."settings"->'remoteAccess'->>'enabled')::boolean
    THEN jsonb_build_object(
      'selector', o."settings"->'remoteAccess'->'deviceSelector',
      'labels', CASE WHEN jsonb_typeof(o."settings"->'remoteAccess'->'deviceSelector') = 'string'
                     THEN (SELECT dl."labels" FROM "Device" dl WHERE dl."id" = u."id") END,
      'pending', EXISTS (SELECT 1 FROM "RemoteConnection" rc
                          WHERE rc."deviceId" = u."id" AND rc."deviceJoinedAt" IS NULL AND rc."endedAt" IS NULL))
    END
    FROM "Organization" o WHERE o."id" = u."organizationId")`;

export async function remoteAccessAnswer(services: Services, deviceId: string, flags: RemoteAccessFlags): Promise<{ enabled: boolean; pending: Offer[] }> {
  const selector = typeof flags.selector === "string" ? flags.selector : null;
  if (!matchesSelector({ deviceSelector: selector }, flags.labels)) return { enabled: false, pending: [] };
  return { enabled: true, pending: flags.pending ? await pendingOffers(services, deviceId, false) : [] };
}
