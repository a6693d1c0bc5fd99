import { describe, expect, it } from "vitest";
import { reloadOnceWhenAChunkFailsToLoad, RETRY_WINDOW_MS } from "./chunk-load-recovery";

function host() {
  const target = new EventTarget();
  const stored = new Map<string, string>();
  const appended: { rel: string; href: string }[] = [];
  let reloads = 0;
  return {
    addEventListener: (type: "vite:preloadError", listener: (event: Event) => void) => target.addEventListener(type, listener),
    sessionStorage: { getItem: (k: string) => stored.get(k) ?? null, setItem: (k: string, v: string) => void stored.set(k, v) },
    location: { reload: () => void reloads++ },
    document: {
      createElement: () => ({ rel: "", href: "" }),
      head: { appendChild: (node: never) => void appended.push(node) },
    },
    /** dispatches Vite's event (with the error Vite gives, when `message`); true when the console took it over (Vite then does not throw) */
    fail: (message?: string) => {
      const event = new Event("vite:preloadError", { cancelable: true });
      if (message) Object.assign(event, { payload: new Error(message) });
      return !target.dispatchEvent(event);
    },
    reloads: () => reloads,
    appended,
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

  it("asks for a stylesheet once more, in the page's own document, without reloading", () => {
    const h = host();
    reloadOnceWhenAChunkFailsToLoad(h, () => 1_000_000);
    expect(h.fail("Unable to preload CSS for /assets/devices-3f9a.css")).toBe(true);
    expect(h.appended).toEqual([{ rel: "stylesheet", href: "/assets/devices-3f9a.css" }]);
    expect(h.reloads()).toBe(0);
    // code that fails still reloads
    expect(h.fail("Failed to fetch dynamically imported module: /assets/devices-1c2d.js")).toBe(true);
    expect(h.reloads()).toBe(1);
    expect(h.appended).toHaveLength(1);
  });
});
