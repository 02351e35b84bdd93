// Drives a real VS Code (code-server) in headless Chromium for tests/editors/test_vscode_real.py.
//
// One JSON request per stdin line, one JSON answer per stdout line:
//   {"id": 1, "op": "open", "url": "..."}  →  {"id": 1, "ok": true, "value": ...}
// Ops are small primitives (keys, clicks, waits on DOM text, screenshots); the test logic
// lives in Python. playwright-core comes from the code-server install directory
// (NDOMO_CODE_SERVER_DIR), the browser is the system's Chromium (NDOMO_CHROMIUM).
// The browser is closed on "close", on stdin's end and on SIGTERM, so nothing outlives it.

import { createRequire } from "node:module";
import { createInterface } from "node:readline";
import { join } from "node:path";

const dir = process.env.NDOMO_CODE_SERVER_DIR;
const require = createRequire(join(dir, "package.json"));
const { chromium } = require("playwright-core");

const server = await chromium.launchServer({
  executablePath: process.env.NDOMO_CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-crash-reporter",
    "--disable-breakpad",
    "--disable-features=Translate,MediaRouter,OptimizationHints",
  ],
});
const browser = await chromium.connect(server.wsEndpoint());
let page;

async function shutdown(code) {
  try {
    await browser.close();
  } catch {}
  try {
    await server.close();
  } catch {}
  process.exit(code);
}
process.on("SIGTERM", () => void shutdown(0));

const DEFAULT_TIMEOUT = Number(process.env.NDOMO_DRIVER_TIMEOUT_MS || 60000);

/** innerText of every element matching `selector` (visible ones only unless `all`). */
async function texts(selector, all = false) {
  return page.$$eval(
    selector,
    (els, all) => els.filter((e) => all || e.offsetParent !== null || e.getClientRects().length > 0).map((e) => (e.innerText ?? e.textContent ?? "").replace(/\u00a0/g, " ")),
    all,
  );
}

function matcher(text, regex) {
  if (regex) {
    const re = new RegExp(regex, "s");
    return (s) => re.test(s);
  }
  return (s) => s.includes(text);
}

/** Wait until some element matching `selector` has text matching; returns that text. */
async function waitText({ selector, text, regex, gone = false, timeout = DEFAULT_TIMEOUT }) {
  const ok = matcher(text, regex);
  const deadline = Date.now() + timeout;
  let last = [];
  for (;;) {
    last = await texts(selector).catch(() => []);
    const hit = last.find(ok);
    if (gone ? hit === undefined : hit !== undefined) return gone ? true : hit;
    if (Date.now() > deadline) {
      throw new Error(`${gone ? "still" : "never"} saw ${regex ? "/" + regex + "/" : JSON.stringify(text)} in ${selector}; last: ${JSON.stringify(last).slice(0, 1500)}`);
    }
    await page.waitForTimeout(200);
  }
}

/** The page, or the frame reached through nested iframes (a webview is an iframe in an iframe). */
function scope(frames) {
  let s = page;
  for (const f of frames ?? []) s = s.frameLocator(f);
  return s;
}

const ops = {
  async frameFill({ frames, selector, text, timeout = DEFAULT_TIMEOUT }) {
    await scope(frames).locator(selector).first().fill(text, { timeout });
    return true;
  },
  /** Pick an option of a <select> in frames, as a user does (fires input and change). */
  async frameSelect({ frames, selector, value, timeout = DEFAULT_TIMEOUT }) {
    await scope(frames).locator(selector).first().selectOption(value, { timeout });
    return true;
  },
  async frameClick({ frames, selector, text, timeout = DEFAULT_TIMEOUT }) {
    let loc = scope(frames).locator(selector);
    if (text !== undefined) loc = loc.filter({ hasText: text });
    await loc.first().click({ timeout });
    return true;
  },
  /** What a framed page declares and loaded: its CSP meta, scripts, styles and every resource
   * fetched (the function runs through the debugger protocol, not the page's own script). */
  async framePage({ frames, timeout = DEFAULT_TIMEOUT }) {
    return await scope(frames).locator(":root").first().evaluate(() => ({
      csp: document.querySelector('meta[http-equiv="Content-Security-Policy"]')?.getAttribute("content") ?? null,
      scripts: [...document.scripts].map((s) => s.src),
      links: [...document.querySelectorAll("link[href]")].map((l) => l.href),
      resources: performance.getEntriesByType("resource").map((e) => e.name),
      origin: location.origin,
    }), undefined, { timeout });
  },
  /** A function's result in the framed page, called with its root element (`js`: the function's
   * source; run through the debugger protocol, so the page's CSP does not apply to it). */
  async frameEval({ frames, js, timeout = DEFAULT_TIMEOUT }) {
    const fn = (0, eval)(`(${js})`); // the test's own function, here; playwright sends its source
    return await scope(frames).locator(":root").first().evaluate(fn, undefined, { timeout });
  },
  /** waitText inside frames: some element matching `selector` there has matching text. */
  async frameWaitText({ frames, selector, text, regex, gone = false, timeout = DEFAULT_TIMEOUT }) {
    const ok = matcher(text, regex);
    const deadline = Date.now() + timeout;
    let last = [];
    for (;;) {
      last = await scope(frames).locator(selector).allInnerTexts().catch(() => []);
      const hit = last.find(ok);
      if (gone ? hit === undefined : hit !== undefined) return gone ? true : hit;
      if (Date.now() > deadline) {
        throw new Error(`${gone ? "still" : "never"} saw ${regex ? "/" + regex + "/" : JSON.stringify(text)} in ${JSON.stringify(frames)} ${selector}; last: ${JSON.stringify(last).slice(0, 1500)}`);
      }
      await page.waitForTimeout(200);
    }
  },
  async open({ url, width = 1400, height = 900 }) {
    if (page) await page.close();
    page = await browser.newPage({ viewport: { width, height } });
    page.setDefaultTimeout(DEFAULT_TIMEOUT);
    await page.goto(url);
    await page.waitForSelector(".monaco-workbench", { timeout: DEFAULT_TIMEOUT });
    return true;
  },
  async press({ keys }) {
    for (const k of [].concat(keys)) await page.keyboard.press(k);
    return true;
  },
  async type({ text }) {
    await page.keyboard.type(text, { delay: 5 });
    return true;
  },
  async insert({ text }) {
    await page.keyboard.insertText(text);
    return true;
  },
  async click({ selector, text, regex, exact = false, button = "left", timeout = DEFAULT_TIMEOUT }) {
    let loc = page.locator(selector);
    if (text !== undefined || regex !== undefined) {
      loc = loc.filter({ hasText: regex ? new RegExp(regex) : exact ? new RegExp(`^\\s*${text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\s*$`) : text });
    }
    await loc.first().click({ button, timeout });
    return true;
  },
  async hover({ selector, timeout = DEFAULT_TIMEOUT }) {
    await page.locator(selector).first().hover({ timeout });
    return true;
  },
  async waitText(args) {
    return waitText(args);
  },
  async waitSelector({ selector, state = "visible", timeout = DEFAULT_TIMEOUT }) {
    await page.waitForSelector(selector, { state, timeout });
    return true;
  },
  async texts({ selector, all = false }) {
    return texts(selector, all);
  },
  async count({ selector }) {
    return page.locator(selector).count();
  },
  async attr({ selector, name }) {
    return page.$$eval(selector, (els, name) => els.map((e) => e.getAttribute(name)), name);
  },
  async eval({ js }) {
    return page.evaluate(js);
  },
  async screenshot({ path, selector }) {
    // `selector`: that part of the window only (the docs' pictures of one view)
    if (page && selector) await page.locator(selector).first().screenshot({ path });
    else if (page) await page.screenshot({ path, fullPage: false });
    return path;
  },
  async sleep({ ms }) {
    // for letting the UI settle between key strokes, never for a result
    await page.waitForTimeout(ms);
    return true;
  },
  async close() {
    setImmediate(() => void shutdown(0));
    return true;
  },
};

const rl = createInterface({ input: process.stdin });
rl.on("line", async (line) => {
  let req;
  try {
    req = JSON.parse(line);
  } catch {
    return;
  }
  const reply = (obj) => process.stdout.write(JSON.stringify({ id: req.id, ...obj }) + "\n");
  try {
    const fn = ops[req.op];
    if (!fn) throw new Error(`unknown op ${req.op}`);
    reply({ ok: true, value: await fn(req) });
  } catch (err) {
    reply({ ok: false, error: String(err && err.stack ? err.stack : err) });
  }
});
rl.on("close", () => void shutdown(0));
process.stdout.write(JSON.stringify({ ready: true, browserPid: server.process().pid }) + "\n");
