// Run by TestLaunch: opens SMOKE_HTML in the Chromium launch.mjs starts and checks what it shows.
import { pathToFileURL } from "node:url";
import { check, failures, launch } from "../launch.mjs";

const context = await launch();
try {
  const page = context.pages()[0] || await context.newPage();
  await page.goto(pathToFileURL(process.env.SMOKE_HTML).href);
  check(await page.locator("h1").innerText() === "ditto", "the heading reads ditto");
  const cells = await page.locator("table#t td").allInnerTexts();
  check(JSON.stringify(cells) === JSON.stringify(["a", "1"]), "the table reads " + JSON.stringify(cells));
  check(await page.evaluate(() => navigator.webdriver) === true, "the page is driven by Playwright");
} finally {
  await context.close();
}
process.exit(failures.length ? 1 : 0);
