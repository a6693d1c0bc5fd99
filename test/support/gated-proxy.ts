// An HTTP proxy on loopback that forwards to a real server (Git, OCI registry) and can hold
// chosen requests: the fault tests kill a server process while its sync waits on one.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { applyConnectionTimeouts } from "../../src/lib/http-timeouts.js";

/**
 * An HTTP proxy that holds the requests `held` picks (a Git pack fetch, an OCI manifest read)
 * until `open()`, so that a test can kill a process while it waits for them.
 */
export async function gatedProxy(target: string, held: (req: http.IncomingMessage) => boolean) {
  let open = false;
  let release: () => void = () => undefined;
  let gate = new Promise<void>((r) => (release = r));
  let heldFetches = 0;
  const server = http.createServer((req, res) => {
    const forward = () => {
      const upstream = http.request(target + req.url, { method: req.method, headers: { ...req.headers, host: new URL(target).host } }, (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      });
      upstream.on("error", () => res.destroy());
      req.pipe(upstream);
    };
    if (!open && held(req)) {
      heldFetches++;
      req.pause();
      void gate.then(forward);
    } else forward();
  });
  applyConnectionTimeouts(server); // as the service sets them: the service, its client, closes idle sockets first
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get heldFetches() {
      return heldFetches;
    },
    open() {
      open = true;
      release();
    },
    close: () => {
      release();
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
    reset() {
      open = false;
      gate = new Promise<void>((r) => (release = r));
    },
  };
}

export type GatedProxy = Awaited<ReturnType<typeof gatedProxy>>;
