// A page's code or style chunk that fails to load (a connection reset by a busy server, or the
// service upgraded while the tab stayed open, so the old chunk names are gone) would leave the
// page blank with a console error. Vite announces such a failure as `vite:preloadError`
// (https://vite.dev/guide/build#load-error-handling). A stylesheet is asked for once more in
// the background; for code the console reloads once, which fetches the current index and its chunks. A second failure within RETRY_WINDOW_MS is let
// through (the error shows), so a chunk that is really missing cannot make the page reload forever.
const LAST_RELOAD_KEY = "fm-chunk-reload-at";
export const RETRY_WINDOW_MS = 10_000;

/** What it needs of `window` (a test passes its own). */
export interface ReloadHost {
  addEventListener(type: "vite:preloadError", listener: (event: Event) => void): void;
  sessionStorage: Pick<Storage, "getItem" | "setItem">;
  location: Pick<Location, "reload">;
  document: {
    createElement(tagName: "link"): Pick<HTMLLinkElement, "rel" | "href">;
    head: { appendChild(node: never): unknown };
  };
}

/** A page's stylesheet that failed: asked for once more in the background (the page's code has loaded). */
function retryStylesheet(document: ReloadHost["document"], event: Event): boolean {
  const href = /^Unable to preload CSS for (\S+)$/.exec(String((event as Event & { payload?: Error }).payload?.message ?? ""))?.[1];
  if (!href) return false;
  const link = document.createElement("link");
  link.rel = "stylesheet";
  link.href = href;
  document.head.appendChild(link as never);
  return true;
}

export function reloadOnceWhenAChunkFailsToLoad(host: ReloadHost = window, now: () => number = Date.now): void {
  host.addEventListener("vite:preloadError", (event) => {
    // A stylesheet: no reload needed, the page goes on and its styles arrive with the retry.
    if (retryStylesheet(host.document, event)) {
      event.preventDefault();
      return;
    }
    const last = Number(host.sessionStorage.getItem(LAST_RELOAD_KEY) ?? 0);
    if (now() - last < RETRY_WINDOW_MS) return;
    event.preventDefault();
    host.sessionStorage.setItem(LAST_RELOAD_KEY, String(now()));
    host.location.reload();
  });
}
