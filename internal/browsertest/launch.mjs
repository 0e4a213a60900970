// Launches the system's Chromium for ditto's browser scripts (internal/report/e2e,
// internal/console/e2e), the same way for each: headless, a fresh profile, no network services
// of the browser's own. playwright-core is resolved from this directory's node_modules, which
// browsertest.Setup installs (npm ci of the pinned package-lock.json; no browser download).
//
// Env (set by browsertest's Playwright.Run): CHROMIUM (the executable), BROWSER_PROFILE (a fresh
// user data directory).
import { chromium } from "playwright-core";

export async function launch(options = {}) {
  return chromium.launchPersistentContext(process.env.BROWSER_PROFILE, {
    executablePath: process.env.CHROMIUM,
    headless: true,
    viewport: { width: 1400, height: 1000 },
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    ...options,
  });
}

// failures are the checks that failed so far; check logs one check and records a failure.
export const failures = [];
export function check(ok, what) {
  if (ok) console.log("ok   " + what);
  else { console.log("FAIL " + what); failures.push(what); }
}
