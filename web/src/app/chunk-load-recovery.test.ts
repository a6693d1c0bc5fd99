import { describe, expect, it } from "vitest";
import { reloadOnceWhenAChunkFailsToLoad, RETRY_WINDOW_MS } from "./chunk-load-recovery";

function host() {
  const target = new EventTarget();
  const stored = new Map<string, string>();
  let reloads = 0;
  return {
    addEventListener: (type: "vite:preloadError", listener: (event: Event) => void) => target.addEventListener(type, listener),
    sessionStorage: { getItem: (k: string) => stored.get(k) ?? null, setItem: (k: string, v: string) => void stored.set(k, v) },
    location: { reload: () => void reloads++ },
    /** dispatches Vite's event; true when the console took it over (Vite then does not throw) */
    fail: () => !target.dispatchEvent(new Event("vite:preloadError", { cancelable: true })),
    reloads: () => reloads,
  };
}

describe("a chunk that fails to load", () => {
  it("reloads once, and lets a second failure within the window through", () => {
    const h = host();
    let clock = 1_000_000;
    reloadOnceWhenAChunkFailsToLoad(h, () => clock);
    expect(h.fail()).toBe(true);
    expect(h.reloads()).toBe(1);
    clock += RETRY_WINDOW_MS - 1;
    expect(h.fail()).toBe(false); // the error shows: no reload loop
    expect(h.reloads()).toBe(1);
    clock += 2;
    expect(h.fail()).toBe(true); // a later failure (another page, later on) reloads again
    expect(h.reloads()).toBe(2);
  });
});
