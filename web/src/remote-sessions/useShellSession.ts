// One shell session's stream in the browser: opened with the signed-in session's cookie
// (POST /remote-sessions answers a one-use ticket in streamUrl; the WebSocket to it comes from
// the console's own origin, and the service refuses any other Origin), keystrokes on channel 0,
// the window size on channel 4, output through an OutputFeed (bounded, flow-controlled: feed.ts),
// and the end said with its reason.
import { useCallback, useEffect, useRef, useState } from "react";
import { messageOf, statusOf } from "../api/client";
import { q } from "../api/query";
import { CHANNEL, decode, deviceRefusalOf, encode, encodeJson, endReasonText, statusOf as statusJson, streamAddress } from "./framing";
import { OutputFeed, type TerminalWriter } from "./feed";

export type ShellState =
  | { phase: "idle" }
  | { phase: "opening" }
  | { phase: "live"; sessionId: string }
  | { phase: "ended"; sessionId?: string; message: string; tone: "info" | "error"; status?: number };

export interface ShellHandle {
  state: ShellState;
  /** bytes of output dropped because the terminal could not keep up (0 normally) */
  dropped: number;
  open(input: { deviceId: string; reason?: string; cols: number; rows: number }): Promise<void>;
  send(data: string): void;
  resize(cols: number, rows: number): void;
  close(): void;
}

export function useShellSession(terminal: () => TerminalWriter | null): ShellHandle {
  const [state, setState] = useState<ShellState>({ phase: "idle" });
  const [dropped, setDropped] = useState(0);
  const socket = useRef<WebSocket | null>(null);
  const closedByUs = useRef(false);

  const close = useCallback(() => {
    closedByUs.current = true;
    socket.current?.close(1000, "closed-by-user");
  }, []);

  // Leaving the page ends the session (the service ends it when the user's leg closes).
  useEffect(() => () => socket.current?.close(1000, "closed-by-user"), []);

  const open = useCallback(async ({ deviceId, reason, cols, rows }: { deviceId: string; reason?: string; cols: number; rows: number }) => {
    const writer = terminal();
    if (!writer) return;
    setState({ phase: "opening" });
    setDropped(0);
    closedByUs.current = false;
    let opened;
    try {
      opened = await q.remoteSessions.open.call({ deviceId, kind: "shell", tty: true, cols, rows, ...(reason ? { reason } : {}) });
    } catch (err) {
      setState({ phase: "ended", message: messageOf(err), tone: "error", status: statusOf(err) });
      return;
    }
    const sessionId = opened.session.id;
    const feed = new OutputFeed(writer, setDropped);
    const ws = new WebSocket(streamAddress(opened.streamUrl, window.location));
    ws.binaryType = "arraybuffer";
    socket.current = ws;
    let exitCode: number | undefined;
    let refusal: string | undefined;
    ws.onopen = () => setState({ phase: "live", sessionId });
    ws.onmessage = (event) => {
      const frame = decode(event.data as ArrayBuffer);
      if (!frame) return;
      if (frame.channel === CHANNEL.stdout || frame.channel === CHANNEL.stderr) feed.push(frame.payload);
      else if (frame.channel === CHANNEL.status) {
        const status = statusJson(frame.payload);
        if (typeof status?.exitCode === "number") exitCode = status.exitCode;
        refusal = deviceRefusalOf(status) ?? refusal;
      }
    };
    ws.onclose = async (event) => {
      if (socket.current === ws) socket.current = null;
      if (closedByUs.current) {
        setState({ phase: "ended", sessionId, message: "You closed the session.", tone: "info" });
        await q.remoteSessions.close.call({ id: sessionId }).catch(() => undefined);
        return;
      }
      if (exitCode !== undefined) return setState({ phase: "ended", sessionId, message: `The shell exited with code ${exitCode}.`, tone: exitCode === 0 ? "info" : "error" });
      if (refusal !== undefined) return setState({ phase: "ended", sessionId, message: endReasonText("device-refused", refusal), tone: "error" });
      // the service records the end a moment after the stream closes
      let reason: string | null = event.reason || null;
      for (let attempt = 0; attempt < 5; attempt++) {
        const session = await q.remoteSessions.get.fetch({ id: sessionId }).catch(() => null);
        if (session?.state === "ended") {
          reason = session.endReason;
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
      setState({ phase: "ended", sessionId, message: endReasonText(reason), tone: reason === "completed" || reason === "closed-by-user" ? "info" : "error" });
    };
  }, [terminal]);

  const send = useCallback((data: string) => {
    if (socket.current?.readyState === WebSocket.OPEN) socket.current.send(encode(CHANNEL.stdin, data));
  }, []);
  const resize = useCallback((cols: number, rows: number) => {
    if (socket.current?.readyState === WebSocket.OPEN) socket.current.send(encodeJson(CHANNEL.resize, { cols, rows }));
  }, []);

  return { state, dropped, open, send, resize, close };
}
