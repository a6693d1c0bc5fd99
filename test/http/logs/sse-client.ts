// A real Server-Sent Events client over fetch: reads the response body as it arrives and
// parses it into events, so tests see exactly what a browser's EventSource would.
export interface SseEvent {
  event: string;
  id: string | null;
  data: string;
}

export interface SseStream {
  status: number;
  headers: Headers;
  events: SseEvent[];
  /** resolves when at least `count` events of type `event` (default "log") have arrived */
  waitFor(count: number, event?: string, timeoutMs?: number): Promise<SseEvent[]>;
  close(): void;
}

export async function openSse(url: string, headers: Record<string, string>): Promise<SseStream> {
  const abort = new AbortController();
  const res = await fetch(url, { headers: { accept: "text/event-stream", ...headers }, signal: abort.signal });
  const events: SseEvent[] = [];
  const waiters: Array<() => void> = [];
  let buffer = "";
  const parse = (block: string) => {
    let event = "message";
    let id: string | null = null;
    const data: string[] = [];
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) continue; // comment (keep-alive)
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "event") event = value;
      else if (field === "id") id = value;
      else if (field === "data") data.push(value);
    }
    if (data.length > 0) events.push({ event, id, data: data.join("\n") });
  };
  if (res.body && res.headers.get("content-type")?.startsWith("text/event-stream")) {
    void (async () => {
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true });
          let end: number;
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            parse(buffer.slice(0, end));
            buffer = buffer.slice(end + 2);
          }
          waiters.splice(0).forEach((w) => w());
        }
      } catch {
        /* aborted */
      }
    })();
  }
  return {
    status: res.status,
    headers: res.headers,
    events,
    waitFor: (count, event = "log", timeoutMs = 10_000) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`SSE: ${events.filter((e) => e.event === event).length} of ${count} "${event}" events after ${timeoutMs} ms`)), timeoutMs);
        const check = () => {
          const matching = events.filter((e) => e.event === event);
          if (matching.length >= count) {
            clearTimeout(timer);
            resolve(matching);
          } else waiters.push(check);
        };
        check();
      }),
    close: () => abort.abort(),
  };
}
