// A page's code or style chunk that fails to load (a connection reset by a busy server, or the
// service upgraded while the tab stayed open, so the old chunk names are gone) would leave the
// page blank with a console error. Vite announces such a failure as `vite:preloadError`
// (https://vite.dev/guide/build#load-error-handling); the console reloads once instead, which
// fetches the current index and its chunks. A second failure within RETRY_WINDOW_MS is let
// through (the error shows), so a chunk that is really missing cannot make the page reload forever.
const LAST_RELOAD_KEY = "fm-chunk-reload-at";
export const RETRY_WINDOW_MS = 10_000;

/** What it needs of `window` (a test passes its own). */
export interface ReloadHost {
  addEventListener(type: "vite:preloadError", listener: (event: Event) => void): void;
  sessionStorage: Pick<Storage, "getItem" | "setItem">;
  location: Pick<Location, "reload">;
}

export function reloadOnceWhenAChunkFailsToLoad(host: ReloadHost = window, now: () => number = Date.now): void {
  host.addEventListener("vite:preloadError", (event) => {
    const last = Number(host.sessionStorage.getItem(LAST_RELOAD_KEY) ?? 0);
    if (now() - last < RETRY_WINDOW_MS) return;
    event.preventDefault();
    host.sessionStorage.setItem(LAST_RELOAD_KEY, String(now()));
    host.location.reload();
  });
}
