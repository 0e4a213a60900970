// The console's browser walk, run by TestConsoleInBrowser (console/e2e_test.go), which serves
// a small demo study and passes what each page must show in CONSOLE_EXPECT. Playwright
// (playwright-core: no browser download) drives the system's Chromium, launched by
// internal/browsertest/launch.mjs.
//
// Env: CONSOLE_URL, CONSOLE_TOKEN, CONSOLE_EXPECT (JSON file), CONSOLE_SHOTS (screenshot
// directory); CHROMIUM and BROWSER_PROFILE for launch.mjs.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { check, failures, launch } from "../../browsertest/launch.mjs";

const base = process.env.CONSOLE_URL;
const token = process.env.CONSOLE_TOKEN;
const want = JSON.parse(readFileSync(process.env.CONSOLE_EXPECT, "utf8"));
const shots = process.env.CONSOLE_SHOTS;
const origin = new URL(base);

const context = await launch({ acceptDownloads: true });
const consoleErrors = [];
// Errors the walk provokes on purpose (a wrong token answers 401, a refused query 403): while
// expected is set, a console error naming that status is set aside, and each must appear once.
let expected = null;
const provoked = [];
const foreign = [];
const dialogs = [];
context.on("request", req => {
  const u = new URL(req.url());
  if (u.protocol === "data:" || u.protocol === "blob:" || u.protocol === "about:") return;
  if (u.hostname !== "127.0.0.1" || u.host !== origin.host) foreign.push(req.url());
});
const page = context.pages()[0] || await context.newPage();
page.on("console", msg => {
  if (msg.type() !== "error") return;
  const where = (msg.location() && msg.location().url) || page.url();
  if (expected && msg.text().includes("status of " + expected.status) && new URL(where).pathname === expected.path) {
    provoked.push(expected.status + " " + where);
    return;
  }
  consoleErrors.push(page.url() + ": " + where + ": " + msg.text());
});
page.on("pageerror", err => consoleErrors.push(page.url() + ": " + err.message));
page.on("dialog", d => { dialogs.push(d.message()); d.dismiss(); });

async function shot(name) {
  await page.screenshot({ path: join(shots, name + ".png"), fullPage: true });
}

async function text(sel) {
  return (await page.locator(sel).first().textContent()) || "";
}

// Polls fn until it returns true or the deadline passes (reloading when asked).
async function eventually(what, fn, { reload = false, ms = 120000 } = {}) {
  const end = Date.now() + ms;
  for (;;) {
    if (await fn()) return true;
    if (Date.now() > end) { check(false, what + " (timed out)"); return false; }
    await page.waitForTimeout(300);
    if (reload) await page.reload();
  }
}

try {
  // Login: every page redirects to the form without the token.
  await page.goto(base + "/");
  check(new URL(page.url()).pathname === "/login", "/ redirects to /login without a session");
  await shot("login");
  await page.fill("#token", "wrong");
  expected = { status: 401, path: "/login" };
  await page.click("#sign-in");
  await page.waitForSelector("#login-error");
  expected = null;
  check((await page.locator("#login-error").count()) === 1, "a wrong token is refused on the form");
  check(provoked.length === 1, "the refused login answered 401: " + JSON.stringify(provoked));
  await page.fill("#token", token);
  await page.click("#sign-in");
  await page.waitForURL(base + "/");
  const cookies = await context.cookies();
  const session = cookies.find(c => c.name === "ditto_session");
  check(session && session.httpOnly && session.sameSite === "Strict", "the session cookie is HttpOnly and SameSite=Strict");
  check(session && !session.value.includes(token), "the cookie does not hold the token");

  // Studies.
  const row = page.locator(`#studies tr[data-study="${want.study}"]`);
  check((await row.count()) === 1, "Studies lists the study");
  check((await row.locator('[data-field="progress"]').textContent()).trim() === want.progress, "Studies: finished / expected is " + want.progress);
  check((await row.locator('[data-field="succeeded_runs"]').textContent()).trim() === String(want.succeeded), "Studies: succeeded is " + want.succeeded);
  await eventually("Studies: the live progress stream delivered an update", async () => (await text("#live-status")).includes("last update"));
  await shot("studies");

  // Study: the metrics table, computed in the background.
  await row.locator("a").first().click();
  // A click returns once its navigation has begun, and count() does not wait: right after it,
  // the Study page's table was counted while its rows were still arriving (not the 18 cells,
  // once in CI). Every navigation below waits for the new page's load event (waitForURL) first.
  await page.waitForURL(u => u.pathname === "/studies/" + want.study);
  await eventually("Study: the metrics are computed", async () => (await page.locator("table#cells thead th").count()) > 10, { reload: true });
  check((await page.locator("table#cells tbody tr").count()) === want.cells, "Study: " + want.cells + " cells");
  const cellHref = `/studies/${want.study}/cell?condition=${encodeURIComponent(want.cell.condition)}&model=${encodeURIComponent(want.cell.model)}&task=${encodeURIComponent(want.cell.task)}`;
  const cellRow = page.locator("table#cells tbody tr", { has: page.locator(`a[href="${cellHref}"]`) });
  check((await cellRow.count()) === 1, "Study: the cell row links to " + cellHref);
  const cols = await cellRow.locator("td").allTextContents();
  check(cols[3] === String(want.cell.n), `Study: the cell's N is ${want.cell.n} (got ${cols[3]})`);
  check(cols[4].startsWith(want.cell.success + " ["), `Study: the cell's success is ${want.cell.success} with its interval (got ${cols[4]})`);
  check((await page.locator("table#conditions tbody tr").count()) >= 3, "Study: the harness components of each condition");
  const sig = await page.locator("table#comparisons tbody tr.sig").count();
  const all = await page.locator("table#comparisons tbody tr").count();
  const visible = await page.locator("table#comparisons tbody tr:visible").count();
  check(visible === sig && all >= sig, `Study: only the ${sig} significant comparisons of ${all} show by default`);
  await page.check("#all-comparisons");
  check((await page.locator("table#comparisons tbody tr:visible").count()) === all, "Study: every comparison shows on request");
  await page.uncheck("#all-comparisons");
  check((await page.locator("#reports a").count()) >= 1, "Study: links its report");
  // Sorting: click N's header twice and the table is ordered.
  await page.locator("table#cells thead th").nth(3).click();
  await shot("study");

  // Cell: the divergence view.
  await cellRow.locator("a").first().click();
  await page.waitForURL(u => u.pathname.endsWith("/cell") && !u.searchParams.has("group"));
  check((await text("#cell-runs")).trim() === String(want.cell.n), "Cell: " + want.cell.n + " scored runs");
  check((await page.locator("#lanes tr.group").count()) === want.cell.groups, "Cell: " + want.cell.groups + " trace groups");
  const sizes = (await page.locator("#lanes tr.group .group-runs").allTextContents()).map(Number);
  check(JSON.stringify(sizes) === JSON.stringify(want.cell.sizes), `Cell: group sizes ${JSON.stringify(want.cell.sizes)}, largest first (got ${JSON.stringify(sizes)})`);
  if (want.cell.groups > 1) {
    check((await page.locator("#lanes td.lane.first").count()) + (await page.locator("#lanes td.part").filter({ hasText: /state|plan|output/ }).count()) >= 1,
      "Cell: where a group parts from the modal one is marked");
  }
  check((await page.locator("#outputs tbody tr").count()) >= 1, "Cell: the distinct outputs with counts");
  await shot("cell");

  // A group: its runs.
  const groupIndex = want.cell.groups > 1 ? 1 : 0;
  await page.locator("#lanes tr.group a.group-link").nth(groupIndex).click();
  // count() does not wait: right after the click it counted the cell page still shown (0 rows,
  // once in CI). Wait for the group page's load, and its first row, then count.
  await page.waitForURL(u => u.searchParams.has("group"));
  await page.locator("#group-runs tbody tr").first().waitFor();
  const groupRuns = await page.locator("#group-runs tbody tr").count();
  check(groupRuns === want.cell.sizes[groupIndex], `Group: lists its ${want.cell.sizes[groupIndex]} runs (got ${groupRuns})`);
  await shot("group");

  // Run.
  await page.locator("#group-runs a.run-link").first().click();
  await page.waitForURL(u => u.pathname.includes("/runs/"));
  const runID = (await text("#run-id")).trim();
  const fig = want.runs[runID];
  check(!!fig, "Run: the run is one of the cell's: " + runID);
  if (fig) {
    check((await text("#run-tokens")).trim() === String(fig.tokens), "Run: tokens " + fig.tokens);
    check((await text("#run-tool-calls")).trim() === String(fig.tool_calls), "Run: tool calls " + fig.tool_calls);
    check((await text("#run-model-calls")).trim() === String(fig.model_calls), "Run: model calls " + fig.model_calls);
    check((await page.locator("#timeline li.ev").count()) === fig.events, "Run: the timeline has its " + fig.events + " events");
    check((await page.locator('#timeline li.ev[data-type="tool.called"]').count()) === fig.calls.length, "Run: every tool call in the timeline");
    check((await page.locator("#waterfall rect").count()) >= fig.model_calls, "Run: the model calls in the waterfall");
  }
  const raw = page.locator("#timeline details.raw").first();
  await raw.locator("summary").click();
  check((await raw.locator("pre").textContent()).includes('"type": "run.started"'), "Run: the raw event JSON on demand");
  await shot("run");

  // Compare with another run of the cell.
  const other = await page.locator("#compare-with").inputValue();
  await page.click("#compare-go");
  await page.waitForURL(/\/compare\?/);
  const a = want.runs[runID], b = want.runs[other];
  check(!!b, "Compare: the other run is one of the cell's: " + other);
  if (a && b) {
    let first = -1;
    for (let i = 0; i < Math.max(a.calls.length, b.calls.length); i++) {
      const x = a.calls[i], y = b.calls[i];
      if (!x || !y || x.tool !== y.tool || JSON.stringify(x.args) !== JSON.stringify(y.args)) { first = i; break; }
    }
    const firstText = await text("#first-difference");
    if (first >= 0) {
      check((await page.locator("#first-step td").first().textContent()).includes(String(first + 1)), `Compare: the first difference is at step ${first + 1}`);
      check(firstText.includes("step " + (first + 1)), "Compare: the first difference is named: " + firstText.trim());
    } else {
      check(/state|plan|output|same trace/.test(firstText), "Compare: the first difference is outside the tool calls: " + firstText.trim());
    }
    check((await page.locator("#compare-steps tbody tr").count()) === Math.max(a.calls.length, b.calls.length), "Compare: both runs aligned step by step");
  }
  await shot("compare");

  // SQL: the public tables, a query, a refusal, a CSV download, recent queries.
  await page.click("header nav a[href='/sql']");
  const tables = await page.locator("#schema .table-name").allTextContents();
  check(tables.includes("runs") && tables.includes("events"), "SQL: lists the public tables");
  for (const t of want.forbidden_tables) check(!tables.includes(t), "SQL: does not list the internal table " + t);
  await page.fill("#sql", want.refused);
  expected = { status: 403, path: "/v1/sql" };
  await page.click("#run-sql");
  await eventually("SQL: the guard's refusal is shown", async () => /refused/.test(await text("#sql-status")));
  expected = null;
  check(provoked.length === 2, "the refused query answered 403: " + JSON.stringify(provoked));
  await page.fill("#sql", want.sql);
  await page.click("#run-sql");
  await eventually("SQL: the query answers", async () => (await page.locator("#result tbody tr").count()) === 1);
  check((await text("#result tbody td")).trim() === want.sql_value, "SQL: the grid shows " + want.sql_value);
  check((await page.locator("#recent li").first().textContent()) === want.sql, "SQL: the query is among the recent ones");
  const [download] = await Promise.all([page.waitForEvent("download"), page.click("#dl-csv")]);
  const csvPath = join(shots, "query.csv");
  await download.saveAs(csvPath);
  const csv = readFileSync(csvPath, "utf8").trim().split(/\r?\n/);
  check(csv[0] === "n" && csv[1] === want.sql_value, "SQL: the CSV download holds the answer (" + JSON.stringify(csv) + ")");
  await shot("sql");

  // Reports.
  await page.click("header nav a[href='/reports/']");
  check((await page.content()).includes(want.report_title), "Reports: the index lists " + want.report_title);
  await shot("reports");

  // A production study's drift over time (the hostile study is production traffic).
  const h = want.hostile;
  await page.goto(base + `/studies/${h.Study}`);
  await eventually("Drift: the chart of the production study is computed", async () => (await page.locator("#drift svg.drift").count()) === 1, { reload: true });
  const driftN = (await page.locator("#drift table.drift-table tr.n td").allTextContents()).reduce((a, x) => a + Number(x), 0);
  check(driftN === 2, `Drift: the windows hold the study's 2 runs (got ${driftN})`);
  await shot("drift");

  // Hostile values render as text on the Run, Compare and Cell pages.
  const hostilePages = [
    ["xss-run", `/studies/${h.Study}/runs/${h.RunA}`],
    ["xss-compare", `/compare?study=${h.Study}&a=${h.RunA}&b=${h.RunB}`],
    ["xss-cell", `/studies/${h.Study}/cell?task=${h.Task}&model=${h.Model}&condition=${h.Condition}`],
  ];
  for (const [name, path] of hostilePages) {
    await page.goto(base + path);
    const body = await page.locator("main").textContent();
    // A value shows as it is, or inside JSON (arguments and outputs are shown as JSON, where a
    // quote is written \"): either way as text.
    for (const v of want.hostile_values) {
      const inJSON = JSON.stringify(v).slice(1, -1);
      check(body.includes(v) || body.includes(inJSON), `${name}: shows ${v} as text`);
    }
    check((await page.locator("img").count()) === 0, name + ": no image element at all");
    check((await page.locator('img[src="x"]').count()) === 0, name + ": no injected image");
    check((await page.locator("main script").count()) === 0, name + ": no injected script element");
    check(await page.evaluate(() => window.__xss === undefined), name + ": no injected script ran");
    await shot(name);
  }
} catch (e) {
  check(false, "the walk threw: " + (e && e.stack || e));
  try { await shot("failure"); } catch (_) { /* nothing more to save */ }
}

check(consoleErrors.length === 0, "no console errors: " + JSON.stringify(consoleErrors));
check(foreign.length === 0, "no request left " + origin.host + ": " + JSON.stringify(foreign));
check(dialogs.length === 0, "no dialog opened: " + JSON.stringify(dialogs));
await context.close();
writeFileSync(join(shots, "walk.txt"), failures.length ? failures.join("\n") + "\n" : "all checks passed\n");
console.log(failures.length ? failures.length + " failed" : "all checks passed");
process.exit(failures.length ? 1 : 0);
