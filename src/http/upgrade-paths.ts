// Which WebSocket upgrade paths the capabilities attached to an HTTP server handle, so that
// an upgrade nobody handles is refused (404) by exactly one of them rather than left open.
// Capabilities register here; this shared layer imports none of them.
import type { Server } from "node:http";

const claims = new WeakMap<Server, Array<(pathname: string) => boolean>>();

/** Registers the paths a capability's upgrade listener handles; returns the unregistration. */
export function claimUpgradePaths(server: Server, handles: (pathname: string) => boolean): () => void {
  const list = claims.get(server) ?? [];
  list.push(handles);
  claims.set(server, list);
  return () => {
    const at = list.indexOf(handles);
    if (at >= 0) list.splice(at, 1);
  };
}

export function isClaimedUpgradePath(server: Server, pathname: string): boolean {
  return (claims.get(server) ?? []).some((handles) => handles(pathname));
}
