// Reads the HTML report's context section as a user sees it, run by TestContextReportInBrowser
// (internal/report/context_acceptance_test.go), which writes what the section must show into
// REPORT_EXPECT. Playwright (playwright-core: no browser download) drives the system's Chromium,
// launched by internal/browsertest/launch.mjs.
//
// Env: REPORT_HTML (the report's file), REPORT_EXPECT (JSON: the section's tables, header and
// rows as text, and its plots, alt and caption), REPORT_SHOTS (screenshot directory); CHROMIUM
// and BROWSER_PROFILE for launch.mjs.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { check, failures, launch } from "../../browsertest/launch.mjs";

const want = JSON.parse(readFileSync(process.env.REPORT_EXPECT, "utf8"));
const context = await launch();
const errors = [];
const foreign = [];
context.on("request", req => {
  const u = new URL(req.url());
  if (!["file:", "data:", "about:"].includes(u.protocol)) foreign.push(req.url());
});
const page = context.pages()[0] || await context.newPage();
page.on("console", msg => { if (msg.type() === "error") errors.push(msg.text()); });
page.on("pageerror", err => errors.push(err.message));

const clean = s => s.replace(/\s+/g, " ").trim();

try {
  await page.goto(pathToFileURL(process.env.REPORT_HTML).href);
  const section = page.locator("section#context");
  check(await section.isVisible(), "the context section is visible");
  check(clean(await section.locator("h2").first().innerText()) === "Context management", "the section is headed Context management");

  for (const [id, t] of Object.entries(want.tables)) {
    const table = section.locator(`table#${id}`);
    check(await table.isVisible(), `table ${id} is visible`);
    const header = (await table.locator("thead th").allInnerTexts()).map(clean);
    check(JSON.stringify(header) === JSON.stringify(t.header), `table ${id}: header ${JSON.stringify(header)}`);
    const rows = table.locator("tbody tr");
    check(await rows.count() === t.rows.length, `table ${id}: ${t.rows.length} rows (got ${await rows.count()})`);
    for (let i = 0; i < t.rows.length; i++) {
      const got = (await rows.nth(i).locator("td").allInnerTexts()).map(clean);
      check(JSON.stringify(got) === JSON.stringify(t.rows[i]), `table ${id} row ${i}: ${JSON.stringify(got)}` +
        (JSON.stringify(got) === JSON.stringify(t.rows[i]) ? "" : ` want ${JSON.stringify(t.rows[i])}`));
    }
  }

  const budgets = await section.locator("table#context-budgets").boundingBox();
  for (const p of want.plots) {
    const fig = section.locator("figure", { has: page.locator(`img[alt="${p.alt}"]`) });
    const img = fig.locator("img");
    check(await img.isVisible(), `plot "${p.alt}" is visible`);
    const info = await img.evaluate(el => {
      // What the picture holds: its decoded size and, drawn on a canvas, how many colours and
      // how much that is not white (a blank or broken image has neither).
      const c = document.createElement("canvas");
      c.width = el.naturalWidth; c.height = el.naturalHeight;
      const g = c.getContext("2d");
      g.drawImage(el, 0, 0);
      const px = g.getImageData(0, 0, c.width, c.height).data;
      const colours = new Set();
      let ink = 0, n = 0;
      for (let i = 0; i < px.length; i += 4 * 7) {
        colours.add((px[i] << 16) | (px[i + 1] << 8) | px[i + 2]);
        if (px[i] < 240 || px[i + 1] < 240 || px[i + 2] < 240) ink++;
        n++;
      }
      return { complete: el.complete, w: el.naturalWidth, h: el.naturalHeight, colours: colours.size, ink: ink / n };
    });
    check(info.complete && info.w >= 600 && info.h >= 250, `plot "${p.alt}" decoded at ${info.w}×${info.h}`);
    check(info.colours >= 6 && info.ink >= 0.02, `plot "${p.alt}" is drawn: ${info.colours} colours, ${(100 * info.ink).toFixed(1)}% ink`);
    const box = await img.boundingBox();
    check(box && box.width >= 400 && budgets && box.y > budgets.y + budgets.height, `plot "${p.alt}" shows ${box && Math.round(box.width)} px wide below the budget table`);
    const caption = clean(await fig.locator("figcaption").last().innerText());
    check(caption === clean(p.caption), `plot "${p.alt}" has its caption`);
  }
  await section.screenshot({ path: join(process.env.REPORT_SHOTS, "context-section.png") });
} catch (e) {
  check(false, "the walk threw: " + (e && e.stack || e));
} finally {
  await context.close();
}
check(errors.length === 0, "no console error: " + JSON.stringify(errors));
check(foreign.length === 0, "no request leaves the file: " + JSON.stringify(foreign));
if (failures.length > 0) {
  console.log(failures.length + " check(s) failed");
  process.exit(1);
}
