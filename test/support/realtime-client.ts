// A realtime WebSocket client for tests: opens the channel with a ticket, resolves once the
// server said "ready" (or with the refusal status), and waits for matching messages.
import WebSocket from "ws";

export interface RealtimeClient {
  ws: WebSocket;
  messages: any[];
  next(predicate?: (m: any) => boolean, timeoutMs?: number): Promise<any>;
  close(): void;
}

/** Opens the realtime WebSocket with a ticket; resolves after "ready", or with the refusal status. */
export function connectRealtime(baseUrl: string, ticket: string): Promise<RealtimeClient | { refused: number }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${baseUrl.replace(/^http/, "ws")}/api/v1/realtime?ticket=${encodeURIComponent(ticket)}`);
    const messages: any[] = [];
    const waiters: Array<() => void> = [];
    let read = 0;
    ws.on("unexpected-response", (_req, res) => {
      resolve({ refused: res.statusCode ?? 0 });
      res.resume();
    });
    ws.on("error", (err) => reject(err));
    ws.on("message", (data) => {
      messages.push(JSON.parse(String(data)));
      waiters.splice(0).forEach((w) => w());
    });
    const client: RealtimeClient = {
      ws,
      messages,
      close: () => ws.terminate(),
      next: (predicate = () => true, timeoutMs = 15_000) =>
        new Promise((res, rej) => {
          const timer = setTimeout(() => rej(new Error(`no matching message after ${timeoutMs} ms; got ${JSON.stringify(messages.slice(read))}`)), timeoutMs);
          const check = () => {
            while (read < messages.length) {
              const m = messages[read++];
              if (predicate(m)) {
                clearTimeout(timer);
                return res(m);
              }
            }
            waiters.push(check);
          };
          check();
        }),
    };
    ws.once("open", () => client.next((m) => m.type === "ready").then(() => resolve(client), reject));
  });
}
