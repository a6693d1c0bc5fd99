// Recordings of shell sessions are asciicast v2 (docs.asciinema.org, "asciicast v2"): a JSON
// header line { version: 2, width, height, timestamp? }, then one JSON array per event,
// [seconds since start, "o" | "i" | "r" | "m", data]. Only output ("o") and resizes ("r",
// "COLSxROWS") change what is shown. Pure, unit-tested in asciicast.test.ts.

export interface Cast {
  width: number;
  height: number;
  events: CastEvent[];
  /** the lines that did not parse (a recording cut at its size cap may end mid-line) */
  skipped: number;
}

export type CastEvent = { at: number; type: "o"; data: string } | { at: number; type: "r"; cols: number; rows: number };

export function parseCast(text: string): Cast {
  const lines = text.split("\n").filter((l) => l.trim() !== "");
  if (lines.length === 0) throw new Error("the recording is empty");
  let header: { version?: unknown; width?: unknown; height?: unknown };
  try {
    header = JSON.parse(lines[0]);
  } catch {
    throw new Error("the recording's first line is not an asciicast header");
  }
  if (header.version !== 2) throw new Error(`an asciicast v2 recording was expected, not version ${String(header.version)}`);
  const events: CastEvent[] = [];
  let skipped = 0;
  for (const line of lines.slice(1)) {
    try {
      const [at, type, data] = JSON.parse(line) as [unknown, unknown, unknown];
      if (typeof at !== "number" || typeof data !== "string") throw new Error("not an event");
      if (type === "o") events.push({ at, type, data });
      else if (type === "r") {
        const m = /^(\d+)x(\d+)$/.exec(data);
        if (m) events.push({ at, type, cols: Number(m[1]), rows: Number(m[2]) });
      }
    } catch {
      skipped++;
    }
  }
  return { width: Number(header.width) || 80, height: Number(header.height) || 24, events, skipped };
}

/** When each event is shown at `speed`, pauses longer than `maxIdle` seconds shortened to it (asciinema's idle_time_limit). */
export function schedule(events: CastEvent[], speed = 1, maxIdle = 2): number[] {
  const times: number[] = [];
  let previous = 0;
  let clock = 0;
  for (const event of events) {
    clock += Math.min(Math.max(event.at - previous, 0), maxIdle);
    previous = event.at;
    times.push((clock / speed) * 1000);
  }
  return times;
}
