// The browser side of the console's end-to-end tests: Debian's Chromium driven by
// playwright-core (never Playwright's own browser download), one context per test, and the
// checks every browser test gets without asking. A test fails when its page
// * throws (an uncaught error or a rejected promise: `pageerror`),
// * writes a console.error (the browser's own "Failed to load resource" lines excepted: the
//   answers themselves are checked, below),
// * gets a 5xx from the service, or a 4xx the test did not announce with `expectStatus`
//   (a page that asks for what it may not see is a defect too),
// * sends a request to a host that is not loopback (refused by route interception, so
//   nothing leaves the machine), or opens such a WebSocket,
// * shows an axe-core violation of impact serious or critical: `audit()` runs axe on the
//   page as it is; `goto()` audits every page it opens, and a test that reaches a page some
//   other way (a click, a redirect after sign-in) audits it itself: at the end, every console
//   path the page displayed must have been audited.
// The Content Security Policy stays on (no bypassCSP): a violation is a console error.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { afterAll, beforeAll, onTestFinished } from "vitest";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { launchBrowser } from "./chromium.js";
import { ROOT } from "./server-process.js";
import { startConsoleService, type ConsoleService } from "./console-service.js";

export { launchBrowser };

export const SCREENSHOT_DIR = path.join(ROOT, "test-results", "screenshots");
/** how long a condition in the page may take (a fresh 2-core CI machine running a service, Chromium and the test) */
export const UI_TIMEOUT_MS = 20_000;

const AXE_SOURCE = fs.readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
/** axe's answers by page fingerprint (markup, viewport, colour scheme), for this worker process */
const AUDITED_MARKUP = new Map<string, AxeViolation[]>();
const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]", "::1"]);
const CHECKED_PROTOCOLS = new Set(["http:", "https:", "ws:", "wss:"]);

export function isLoopback(url: string): boolean {
  const parsed = new URL(url);
  return !CHECKED_PROTOCOLS.has(parsed.protocol) || LOOPBACK_HOSTS.has(parsed.hostname);
}

export interface ConsoleSuite {
  readonly service: ConsoleService;
  readonly browser: Browser;
  /** a new context and page on the service (openConsole) */
  open(opts?: Parameters<typeof openConsole>[2]): Promise<ConsolePage>;
}

/**
 * For a test file: a service (with `env` added to its configuration) and Chromium, started
 * before its tests (together: each takes seconds) and closed after them.
 */
export function consoleSuite(env: Record<string, string> = {}, options: Parameters<typeof startConsoleService>[1] = {}): ConsoleSuite {
  let service: ConsoleService | undefined;
  let browser: Browser | undefined;
  beforeAll(async () => {
    [service, browser] = await Promise.all([startConsoleService(env, options), launchBrowser()]);
  }, options.asNewcomer ? 240_000 : undefined);
  afterAll(async () => {
    await browser?.close();
    await service?.close();
  });
  const started = <T>(value: T | undefined, what: string): T => {
    if (!value) throw new Error(`${what} is not started (use it inside the file's tests and hooks)`);
    return value;
  };
  return {
    get service() {
      return started(service, "the service");
    },
    get browser() {
      return started(browser, "Chromium");
    },
    open: (opts) => openConsole(started(browser, "Chromium"), started(service, "the service"), opts),
  };
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: unknown[]; html: string; failureSummary?: string }[];
}

export interface ConsolePage {
  page: Page;
  context: BrowserContext;
  service: ConsoleService;
  /** the service's base URL (the console's origin) */
  url: string;
  /** signs the context in through the API (the same cookie the sign-in page gets) */
  signIn(user: { email: string; password: string }): Promise<void>;
  /** opens a console path, waits until it has loaded (no spinner, no busy table) and audits it */
  goto(path: string): Promise<void>;
  /** waits until nothing on the page is loading */
  settled(): Promise<void>;
  /** runs axe-core on the page as it is now; serious and critical violations fail the test */
  audit(): Promise<AxeViolation[]>;
  /** saves test-results/screenshots/<name>.png */
  screenshot(name: string): Promise<string>;
  /** announces that the page will receive this status (from a path containing `urlPart`) */
  expectStatus(status: number, urlPart?: string): void;
  /** what went wrong so far (the test fails with these when it ends) */
  problems(): string[];
  /** closes the context; throws with the problems found */
  close(): Promise<void>;
}

/**
 * A new browser context (its own cookies) and page on the service, 1280x800, light theme,
 * with every check above armed. Closed, and its problems reported, when the test ends.
 */
export async function openConsole(browser: Browser, service: ConsoleService, opts: {
  /** signed in as this person (through the API) before the test's first page */
  user?: { email: string; password: string };
  colorScheme?: "light" | "dark";
  viewport?: { width: number; height: number };
} = {}): Promise<ConsolePage> {
  const context = await browser.newContext({
    baseURL: service.url,
    viewport: opts.viewport ?? { width: 1280, height: 800 },
    colorScheme: opts.colorScheme ?? "light",
    locale: "en-US",
    timezoneId: "UTC",
  });
  context.setDefaultTimeout(UI_TIMEOUT_MS);
  const page = await context.newPage();
  const problems: string[] = [];
  const expected: { status: number; urlPart?: string }[] = [
    // Before sign-in the console asks who is signed in; the answer is 401 and leads to sign-in.
    { status: 401, urlPart: "tenant.context" },
  ];
  const displayed: string[] = [];
  const audited = new Set<string>();

  await context.route((url) => !isLoopback(url.toString()), async (route) => {
    problems.push(`request to a host that is not loopback: ${route.request().method()} ${route.request().url()}`);
    await route.abort("blockedbyclient");
  });
  page.on("websocket", (ws) => {
    if (!isLoopback(ws.url())) problems.push(`WebSocket to a host that is not loopback: ${ws.url()}`);
  });
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() !== "error") return;
    if (message.text().startsWith("Failed to load resource:")) return; // the response is checked below
    problems.push(`console.error: ${message.text()}`);
  });
  // Requests that got no answer (a reset connection, a truncated body): not a problem by
  // themselves (a navigation aborts the previous page's requests), but named beside the
  // problems they cause, which otherwise say only that a resource failed.
  const failedRequests: string[] = [];
  page.on("requestfailed", (request) => failedRequests.push(`${request.method()} ${request.url()}: ${request.failure()?.errorText ?? "failed"} at ${new Date().toISOString()}`));
  page.on("response", (response) => {
    const status = response.status();
    if (status < 400) return;
    const url = response.url();
    if (status < 500 && expected.some((e) => e.status === status && (!e.urlPart || url.includes(e.urlPart)))) return;
    problems.push(`unexpected ${status} for ${response.request().method()} ${url}`);
  });
  const origin = new URL(service.url).origin;
  page.on("framenavigated", (frame) => {
    // Console pages only (a test may visit a page of its own elsewhere).
    if (frame !== page.mainFrame() || new URL(frame.url()).origin !== origin) return;
    const pathname = new URL(frame.url()).pathname;
    // A page that sent the browser straight to sign-in was never shown.
    if (pathname === "/sign-in" && displayed.length && new URL(frame.url()).searchParams.get("next")?.split("?")[0] === displayed.at(-1)) displayed.pop();
    if (displayed.at(-1) !== pathname) displayed.push(pathname);
  });

  const settled = async () => {
    await page.waitForLoadState("load");
    // React draws after "load": until it has drawn a page (a heading) or a loading state, the
    // absence of a loading state below would prove nothing.
    await page.locator('#root :is(h1, h2, h3), #root .spinner, #root .skeleton, #root [aria-busy="true"], #root [role="alert"]').first().waitFor({ state: "attached" }).catch(async (err: Error) => {
      throw new Error(`the page drew nothing at ${page.url()}: ${err.message}`);
    });
    await page.locator('.spinner, .skeleton, [aria-busy="true"]').first().waitFor({ state: "detached" }).catch(async (err: Error) => {
      throw new Error(`the page is still loading at ${page.url()}: ${err.message}`);
    });
  };

  const audit = async () => {
    // (The page's globals, typed here by hand: the test code is compiled without the DOM library.)
    // Colours mid-transition (a button fading in, a hover starting under the pointer) are not
    // the page's colours: wait until no CSS animation or transition is running (finite ones).
    await page.waitForFunction(() => {
      const { document } = globalThis as unknown as { document: { getAnimations(): { playState: string; effect: { getTiming(): { iterations: number } } | null }[] } };
      return document.getAnimations().every((a) => a.playState !== "running" || a.effect?.getTiming().iterations === Infinity);
    }, undefined, { timeout: 5_000 }).catch(() => undefined);
    // The same markup under the same style sheet, viewport and colour scheme gives the same
    // answer: a page drawn exactly as one already audited in this process (the role walk's
    // pages, a list shown again after a dialog closed) reuses that answer instead of running
    // axe again (~0.4 s of Chromium's CPU each on a 2-core machine).
    const fingerprint = await page.evaluate(() => {
      const { document, innerWidth, innerHeight, matchMedia } = globalThis as unknown as { document: { documentElement: { outerHTML: string } }; innerWidth: number; innerHeight: number; matchMedia(q: string): { matches: boolean } };
      const html = document.documentElement.outerHTML;
      let hash = 0x811c9dc5; // FNV-1a over the markup
      for (let i = 0; i < html.length; i++) hash = Math.imul(hash ^ html.charCodeAt(i), 0x01000193);
      return `${innerWidth}x${innerHeight}|${matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light"}|${html.length}|${(hash >>> 0).toString(16)}`;
    });
    let violations = AUDITED_MARKUP.get(fingerprint);
    if (!violations) {
      const already = await page.evaluate(() => "axe" in globalThis);
      if (!already) await page.evaluate(AXE_SOURCE);
      violations = await page.evaluate(async () => {
        const { axe, document } = globalThis as unknown as { axe: { run(context: unknown, options: object): Promise<{ violations: AxeViolation[] }> }; document: unknown };
        const result = await axe.run(document, { resultTypes: ["violations"] });
        return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target, html: n.html, failureSummary: n.failureSummary })) }));
      });
      AUDITED_MARKUP.set(fingerprint, violations);
    }
    const pathname = new URL(page.url()).pathname;
    audited.add(pathname);
    for (const v of violations) {
      if (v.impact !== "serious" && v.impact !== "critical") continue;
      const where = v.nodes.slice(0, 3).map((n) => `    ${JSON.stringify(n.target)} ${n.html.slice(0, 160)}\n      ${(n.failureSummary ?? "").replaceAll("\n", " ").slice(0, 300)}`).join("\n");
      problems.push(`axe ${v.impact} violation on ${pathname}: ${v.id} (${v.help}), ${v.nodes.length} element(s):\n${where}`);
    }
    return violations;
  };

  const consolePage: ConsolePage = {
    page,
    context,
    service,
    url: service.url,
    signIn: async (user) => {
      const res = await context.request.post(`${service.url}/api/v1/auth/session`, {
        data: { email: user.email, password: user.password },
        headers: { origin: service.url },
      });
      if (res.status() !== 200) throw new Error(`sign-in of ${user.email}: ${res.status()} ${await res.text()}`);
    },
    goto: async (target) => {
      await page.goto(target);
      await settled();
      await audit();
    },
    settled,
    audit,
    screenshot: async (name) => {
      fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
      const file = path.join(SCREENSHOT_DIR, `${name}.png`);
      await page.screenshot({ path: file, animations: "disabled", caret: "hide" });
      return file;
    },
    expectStatus: (status, urlPart) => void expected.push({ status, urlPart }),
    problems: () => [...problems],
    close: async () => {
      for (const cookie of await context.cookies()) service.rememberSecret(cookie.value);
      await context.close();
      const unaudited = [...new Set(displayed)].filter((p) => !audited.has(p));
      const all = [...problems, ...unaudited.map((p) => `page ${p} was shown but never audited with axe (call audit() there)`)];
      if (all.length) throw new Error(`the console misbehaved:\n${all.join("\n")}${failedRequests.length ? `\nrequests that got no answer:\n${failedRequests.join("\n")}` : ""}`);
    },
  };
  onTestFinished(() => consolePage.close());
  if (opts.user) await consolePage.signIn(opts.user);
  return consolePage;
}

/** Fills the sign-in form and submits it, as a person would. */
export async function submitSignInForm(page: Page, email: string, password: string): Promise<void> {
  await page.getByLabel("E-mail").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
}

/**
 * Waits until `locator`'s text content (whitespace runs collapsed, trimmed) satisfies `expected`
 * (a string or a test). The text content joins adjacent elements without a space:
 * <strong>13</strong><span>devices</span> reads "13devices".
 */
export async function waitForText(locator: Locator, expected: string | RegExp | ((text: string) => boolean), timeoutMs = UI_TIMEOUT_MS): Promise<string> {
  const test = typeof expected === "string" ? (t: string) => t === expected : expected instanceof RegExp ? (t: string) => expected.test(t) : expected;
  const deadline = Date.now() + timeoutMs;
  let last = "";
  for (;;) {
    last = ((await locator.textContent({ timeout: 1000 }).catch(() => null)) ?? "").replace(/\s+/g, " ").trim();
    if (test(last)) return last;
    if (Date.now() > deadline) throw new Error(`timed out waiting for the text of ${locator} to be ${String(expected)}; it is "${last}"`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Waits until the page's URL (path and query) satisfies `test`. */
export async function waitForPath(page: Page, test: (url: URL) => boolean, what = "the expected URL"): Promise<URL> {
  await page.waitForURL((url) => test(url), { timeout: UI_TIMEOUT_MS }).catch((err: Error) => {
    throw new Error(`timed out waiting for ${what}; the page is at ${page.url()} (${err.message.split("\n")[0]})`);
  });
  return new URL(page.url());
}
