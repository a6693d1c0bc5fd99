// The baseline: a bare node:http server answering every request with the same JSON the
// service answers (BARE_PAYLOAD; by default the heartbeat's answer), in its own process like
// the service. The ratio of the service's rate to this one's is what the framework,
// authentication and database cost.
import http from "node:http";

const payload = process.env.BARE_PAYLOAD ?? JSON.stringify({ heartbeatIntervalSeconds: 30, deployments: [] });
const server = http.createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(payload) });
    res.end(payload);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`READY ${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}` })}\n`);
});
// Any line on stdin is answered by `DONE {"cpu": process.cpuUsage()}` (bench/support/child.ts
// `command`): the bare server's CPU per request, beside the service's.
process.stdin.on("data", () => void process.stdout.write(`DONE ${JSON.stringify({ cpu: process.cpuUsage() })}\n`));
process.on("SIGTERM", () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
