// A TCP proxy on loopback between the service and its PostgreSQL, so that a test can take the
// database away (every connection cut, new ones refused) and give it back, without touching
// the PostgreSQL server other test files share.
import net from "node:net";

export interface TcpProxy {
  port: number;
  /** cuts every open connection and refuses new ones */
  down(): Promise<void>;
  /** accepts connections again, on the same port */
  up(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, targetHost);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => s.destroy());
    }
    client.pipe(upstream).pipe(client);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  const listen = (port: number) => new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  await listen(0);
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    down: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
    },
    up: () => listen(port),
    close: async () => {
      for (const s of sockets) s.destroy();
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
