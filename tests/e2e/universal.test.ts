// End to end, the universal .vsix (no compiled packages) in code-server with a Python that has none of the
// server's packages (a fresh `python3 -m venv`, as `adopter.interpreter` and first on PATH): the extension
// must not crash-loop. Expected: one notification naming what is missing, with Install; Install makes a private
// environment under the extension's global storage (venv + pip install from PyPI) and restarts the server
// with it; a model file then gets its findings. Artifacts: tests/e2e/out/artifacts/universal-*.
// Run with `make e2e` (tests/e2e/run.sh builds both .vsix files and sets VSIX_UNIVERSAL).
import assert from "node:assert/strict";
import { ChildProcess, execFileSync, spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { Browser, Page } from "playwright-core";

const ROOT = join(__dirname, "..", "..", "..");
const ARTIFACTS = join(ROOT, "tests", "e2e", "out", "artifacts");
const env = (name: string): string => {
  const v = process.env[name];
  if (!v) {
    throw new Error(`${name} is not set: run the end-to-end test with \`make e2e\``);
  }
  return v;
};

let browser: Browser | undefined;
let page: Page;
let server: ChildProcess | undefined;
let serverLog = "";
let home = "";
let barePython = "";

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** The Adopter output channel of this VS Code (what *Adopter: Show Output* shows). */
function adopterLog(): string {
  const logs = join(home, "user-data", "logs");
  let text = "";
  try {
    for (const session of readdirSync(logs).sort()) {
      for (const host of readdirSync(join(logs, session)).filter((d) => d.startsWith("exthost"))) {
        try {
          text += readFileSync(join(logs, session, host, "adopter.adopter", "Adopter.log"), "utf8");
        } catch {
          // this host has no Adopter log
        }
      }
    }
  } catch {
    return "";
  }
  return text;
}

async function waitUntil(ok: () => boolean | Promise<boolean>, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}; the Adopter log ends with:\n${adopterLog().slice(-3000)}`);
    }
    await page.waitForTimeout(500);
  }
}

async function shot(name: string): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS, `universal-${name}.png`) }).catch(() => undefined);
}

async function palette(command: string): Promise<void> {
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor();
  await input.fill(`>${command}`);
  await page.locator(".quick-input-list .monaco-list-row.focused", { hasText: command }).waitFor();
  await page.keyboard.press("Enter");
}

before(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  home = mkdtempSync(join(tmpdir(), "adopter-e2e-universal-"));
  const workspace = join(home, "workspace");
  cpSync(join(ROOT, "tests", "e2e", "workspace", "tinybert"), join(workspace, "tinybert"), { recursive: true });
  // A Python with none of the server's packages: a fresh venv of the machine's python3, first on PATH.
  // ADOPTER_E2E_BASE_PYTHON: another Python to make it from (e.g. python3.13), to try other versions by hand.
  execFileSync(process.env.ADOPTER_E2E_BASE_PYTHON || "python3", ["-m", "venv", join(home, "bare")]);
  barePython = join(home, "bare", "bin", "python3");
  execFileSync(barePython, ["-c", "import importlib.util as u, sys; sys.exit(any(u.find_spec(m) for m in ('tree_sitter', 'tree_sitter_python')))"]);
  const userData = join(home, "user-data");
  const extensions = join(home, "extensions");
  mkdirSync(join(userData, "User"), { recursive: true });
  writeFileSync(join(userData, "User", "settings.json"), JSON.stringify({
    "files.autoSave": "off", "workbench.startupEditor": "none", "workbench.tips.enabled": false,
    "telemetry.telemetryLevel": "off", "extensions.autoCheckUpdates": false, "update.mode": "none",
    "editor.minimap.enabled": false, "window.commandCenter": false, "chat.disableAIFeatures": true,
    "workbench.secondarySideBar.defaultVisibility": "hidden", "workbench.welcomePage.walkthroughs.openOnInstall": false,
    // The extension host takes PATH from a login shell (code-server resolves the shell environment), so
    // the bare Python is also named here; it is first on PATH too.
    "adopter.interpreter": barePython,
  }, null, 2));
  const xdg = { XDG_CONFIG_HOME: join(home, "config"), XDG_DATA_HOME: join(home, "data"), XDG_CACHE_HOME: join(home, "cache") };
  const userEnv = { ...xdg, HOME: home, PATH: `${join(home, "bare", "bin")}:/usr/local/bin:/usr/bin:/bin`, LANG: "C.UTF-8" };
  const codeServer = env("CODE_SERVER");
  const nodeBin = join(env("NODE"), "..");
  execFileSync(codeServer, ["--install-extension", env("VSIX_UNIVERSAL"), "--extensions-dir", extensions, "--user-data-dir", userData],
    { env: { ...userEnv, PATH: `${nodeBin}:${userEnv.PATH}` }, stdio: "inherit" });
  const port = await freePort();
  server = spawn(codeServer, ["--auth", "none", "--bind-addr", `127.0.0.1:${port}`, "--disable-telemetry",
    "--disable-update-check", "--disable-workspace-trust", "--extensions-dir", extensions, "--user-data-dir", userData, workspace],
  { env: { ...userEnv, PATH: `${nodeBin}:${userEnv.PATH}` }, detached: true });
  server.stdout?.on("data", (d) => (serverLog += d));
  server.stderr?.on("data", (d) => (serverLog += d));
  const { chromium } = await import("playwright-core");
  browser = await chromium.launch({
    executablePath: env("CHROMIUM"),
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
      "--disable-sync", "--no-first-run"],
  });
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const url = `http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`;
  for (let i = 0; i < 60; i++) {
    try {
      await page.goto(url, { timeout: 5000 });
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
  await page.locator(".monaco-workbench").waitFor({ timeout: 120_000 });
});

after(async () => {
  await browser?.close();
  if (server?.pid) {
    try {
      process.kill(-server.pid, "SIGTERM"); // the whole group: code-server's extension host lingers otherwise
    } catch {
      // already gone
    }
  }
  writeFileSync(join(ARTIFACTS, "universal-code-server.log"), serverLog);
  writeFileSync(join(ARTIFACTS, "universal-Adopter.log"), adopterLog());
  rmSync(home, { recursive: true, force: true });
});

test("the universal .vsix with a bare Python: one notification, Install, a restarted server, diagnostics", async () => {
  // The notification, before any server ran: it names the missing packages and offers Install.
  const notification = page.locator(".notification-list-item", { hasText: /lacks tree-sitter and tree-sitter-python/ });
  const named = page.locator(".notification-list-item", { hasText: barePython });
  await page.locator('.statusbar-item[aria-label^="Adopter server failed"]').first().waitFor({ timeout: 120_000 });
  if (!(await notification.first().isVisible())) {
    await palette("Notifications: Show Notifications"); // a toast may have been folded into the center
  }
  await notification.first().waitFor({ timeout: 30_000 });
  await shot("notification");
  assert.equal(await named.count(), 1, "the notification names the bare Python"); // the one we set up
  const log = adopterLog();
  assert.match(log, /lacks tree-sitter and tree-sitter-python/); // Show Output says the same
  assert.doesNotMatch(log, /server started|crashed/);
  const texts = await page.locator(".notification-list-item").allInnerTexts();
  assert.equal(texts.filter((t) => /Adopter/.test(t)).length, 1, JSON.stringify(texts));
  assert.ok(texts.every((t) => !/crashed|initialization failed/i.test(t)), JSON.stringify(texts));

  // Install: a private environment under global storage, from PyPI, then the server restarts with it.
  await notification.first().locator(".monaco-button", { hasText: /^Install$/ }).click();
  const running = page.locator('.statusbar-item[aria-label^="Adopter server running"][aria-label*="python-env"]');
  await waitUntil(async () => (await running.count()) > 0, "the server to run from the private environment", 540_000);
  const envPython = join(home, "user-data", "User", "globalStorage", "adopter.adopter", "python-env", "bin", "python");
  assert.ok(existsSync(envPython), `no ${envPython}`);

  // Diagnostics: a model file's findings reach Problems.
  await page.keyboard.press("Control+P");
  const input = page.locator(".quick-input-widget input");
  await input.fill("tinybert/modeling_tinybert.py");
  await page.locator(".quick-input-list .monaco-list-row.focused", { hasText: "modeling_tinybert.py" }).waitFor();
  await page.keyboard.press("Enter");
  await page.locator(".tab.active", { hasText: "modeling_tinybert.py" }).waitFor();
  await page.locator(".statusbar-item", { hasText: /Adopter: [1-9]\d* findings?/ }).first().waitFor({ timeout: 120_000 });
  await page.keyboard.press("Control+Shift+M");
  await page.locator(".markers-panel .monaco-list-row", { hasText: /f0\d-/ }).first().waitFor({ timeout: 60_000 });
  await shot("diagnostics");
  assert.doesNotMatch(adopterLog(), /crashed/);
});
