// Debian's Chromium (CHROMIUM_PATH, else its headless shell, else the full browser: peers.ts)
// driven by playwright-core, headless:
// never Playwright's own browser download, which cannot work here. Used by the browser tests
// (browser.ts) and by `npm run screenshots`.
import { chromium, type Browser } from "playwright-core";
import { peerPath } from "./peers.js";

/** Launches Chromium headless (peerPath("chromium")). */
export async function launchBrowser(): Promise<Browser> {
  const executablePath = peerPath("chromium");
  if (!executablePath) throw new Error("Chromium is missing: apt-get install chromium-headless-shell (or set CHROMIUM_PATH)");
  return chromium.launch({
    executablePath,
    headless: true,
    args: [
      ...(process.getuid?.() === 0 ? ["--no-sandbox"] : []),
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
      "--disable-dev-shm-usage",
    ],
  });
}
