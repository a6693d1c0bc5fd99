// Connection timeouts of an HTTP server.
import type { Server } from "node:http";

/**
 * The timeouts of every HTTP server we run (the service; in tests also the harness and the
 * peers the service calls). Slow clients must not hold a connection forever. An idle
 * keep-alive connection stays open longer than the idle timeouts of load balancers (60 s is
 * common) and of HTTP clients (undici: 4 s, checked on a coarse timer), so that the other side
 * always closes first. With node's 5 s, a client reusing a socket just as the server closed it
 * got ECONNRESET (seen in CI under load); behind a balancer that shows as a 502.
 */
export function applyConnectionTimeouts(server: Server): void {
  server.headersTimeout = 20_000;
  server.requestTimeout = 60_000;
  server.keepAliveTimeout = 65_000;
}
