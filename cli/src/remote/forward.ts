// One TCP connection carried over its own stream of a port-forward session: bytes on channel
// 0 to the device and 1 from it, a half-close as [255, channel]. Back-pressure both ways: the
// TCP socket pauses while the WebSocket holds more than the high watermark, and the WebSocket
// stops being read while the socket's write buffer is full (write() answered false).
import type net from "node:net";
import { CHANNEL } from "./framing.js";
import { readStatus, type RemoteStream } from "./session.js";

export interface Carried {
  /** the device's word when it refused this connection */
  error?: string;
  bytesOut: number;
  bytesIn: number;
}

/** Wires `socket` to a stream opened with `open` (which gets the frame handler); resolves when both are closed. */
export async function carry(socket: net.Socket, open: (onFrame: (f: { channel: number; payload: Buffer }) => void) => Promise<RemoteStream>): Promise<Carried> {
  const result: Carried = { bytesOut: 0, bytesIn: 0 };
  socket.pause(); // nothing is read before the stream is there to take it
  let stream: RemoteStream;
  try {
    stream = await open((frame) => {
      if (frame.channel === CHANNEL.stdout) {
        result.bytesIn += frame.payload.length;
        if (!socket.write(frame.payload)) {
          stream.pauseReading();
          socket.once("drain", () => stream.resumeReading());
        }
      } else if (frame.channel === CHANNEL.close && frame.payload[0] === CHANNEL.stdout) {
        socket.end(); // the device's side ended its half
      } else {
        // the device's word only: the service's own end of the session is said by the caller
        const status = readStatus(frame);
        if (status?.error !== undefined) result.error = status.error;
      }
    });
  } catch (err) {
    socket.destroy();
    throw err;
  }
  socket.on("data", (chunk: Buffer) => {
    result.bytesOut += chunk.length;
    if (!stream.send(CHANNEL.stdin, chunk)) {
      socket.pause();
      void stream.drained().then(() => socket.resume());
    }
  });
  socket.once("end", () => stream.halfClose(CHANNEL.stdin));
  socket.on("error", () => stream.close(1000));
  socket.once("close", () => stream.close(1000));
  socket.resume();
  await stream.closed;
  if (!socket.destroyed) socket.end();
  await new Promise<void>((resolve) => (socket.closed ? resolve() : socket.once("close", () => resolve())));
  return result;
}
