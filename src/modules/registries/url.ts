// Registry URLs of every kind (Git, OCI, global OCI) are checked the same way when saved.
import { assertUrlAllowed, OutboundRefused } from "../../lib/outbound.js";
import { badRequest } from "../../trpc/errors.js";

/** Link-local and metadata literals are refused even on installations that allow private networks. */
export function assertUrlNotForbidden(url: string) {
  try {
    assertUrlAllowed(url, { allowPrivateNetworks: true });
  } catch (err) {
    if (err instanceof OutboundRefused) throw badRequest(`Invalid input: url: ${err.reason}`);
    throw err;
  }
}
