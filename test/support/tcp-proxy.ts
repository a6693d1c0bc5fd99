// A TCP proxy on loopback between a client and a server (the service and its PostgreSQL; a
// device agent and the service), so that a test can take the server away (every connection
// cut, new ones refused) and give it back without touching the server, and count the bytes.
import net from "node:net";

export interface TcpProxy {
  port: number;
  /** bytes that went through, each way (what a client sent, what the target answered) */
  bytes: { toTarget: number; fromTarget: number };
  /** cuts every open connection and refuses new ones */
  down(): Promise<void>;
  /** accepts connections again, on the same port */
  up(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  const bytes = { toTarget: 0, fromTarget: 0 };
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, targetHost);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => s.destroy());
    }
    client.on("data", (chunk: Buffer) => (bytes.toTarget += chunk.length));
    upstream.on("data", (chunk: Buffer) => (bytes.fromTarget += chunk.length));
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
    bytes,
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
