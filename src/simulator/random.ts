// Seeded randomness for the simulator (`--seed`): every device draws from its own streams,
// derived from the seed and the device's name, so that a run with the same seed and the same
// device names makes the same choices, whatever the order in which devices heartbeat. The
// deployment stream is separate from the health stream: how often the health dice roll depends
// on timing, which must not shift which installs fail.

/** A 32-bit hash of a string (FNV-1a). */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** mulberry32: a small, fast generator with good enough spread for simulation; uniform in [0, 1). */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The random stream `stream` of device `name` under `seed`: the same three give the same numbers. */
export function seededRandom(seed: number, name: string, stream: string): () => number {
  return mulberry32(hash(`${seed}/${name}/${stream}`));
}
