// ditto console: sortable tables, the Studies page's live progress, the comparisons filter and
// the SQL page. Everything the pages show from data is written with textContent, never as HTML.
"use strict";

function cellKey(td) {
  const t = (td ? td.textContent : "").trim();
  const m = t.replace(/^[~▶\s]+/, "").match(/^[-+]?\d[\d,]*(\.\d+)?(e[-+]?\d+)?/i);
  if (m) return { n: parseFloat(m[0].replace(/,/g, "")), t };
  return { n: NaN, t };
}

function makeSortable(table) {
  const ths = table.tHead ? table.tHead.rows[0].cells : [];
  Array.from(ths).forEach((th, i) => {
    th.addEventListener("click", () => {
      const asc = !th.classList.contains("asc");
      Array.from(ths).forEach(h => h.classList.remove("asc", "desc"));
      th.classList.add(asc ? "asc" : "desc");
      const body = table.tBodies[0];
      const rows = Array.from(body.rows);
      rows.sort((a, b) => {
        const x = cellKey(a.cells[i]), y = cellKey(b.cells[i]);
        let c;
        if (!isNaN(x.n) && !isNaN(y.n)) c = x.n - y.n;
        else if (isNaN(x.n) !== isNaN(y.n)) c = isNaN(x.n) ? 1 : -1; // numbers first, "—" last
        else c = x.t.localeCompare(y.t);
        return asc ? c : -c;
      });
      rows.forEach(r => body.appendChild(r));
    });
  });
}

function liveStudies(table) {
  const status = document.getElementById("live-status");
  const es = new EventSource(table.dataset.live);
  es.addEventListener("progress", ev => {
    const studies = JSON.parse(ev.data);
    for (const s of studies) {
      const row = Array.from(table.tBodies[0].rows).find(r => r.dataset.study === s.study);
      if (!row) { if (status) status.textContent = "New studies: reload to see them."; continue; }
      for (const f of ["progress", "succeeded_runs", "errored_runs", "incomplete_runs", "last_event", "source_kind"]) {
        const td = row.querySelector('[data-field="' + f + '"]');
        if (td) td.textContent = String(s[f]);
      }
      const p = row.querySelector('progress[data-field="percent"]');
      if (p && s.percent >= 0) { p.value = s.percent; p.textContent = s.percent + "%"; }
    }
    if (status) status.textContent = "Progress updates live (last update " + new Date().toLocaleTimeString() + ").";
  });
  es.onerror = () => { if (status) status.textContent = "Live updates paused; retrying…"; };
}

function comparisonsFilter() {
  const box = document.getElementById("all-comparisons");
  const table = document.getElementById("comparisons");
  if (!box || !table) return;
  const apply = () => table.classList.toggle("only-sig", !box.checked);
  box.addEventListener("change", apply);
  apply();
}

// The SQL page.
const recentKey = "ditto.console.recent";

function recentList() {
  try { return JSON.parse(localStorage.getItem(recentKey) || "[]"); } catch (e) { return []; }
}

function remember(q) {
  const list = recentList().filter(x => x !== q);
  list.unshift(q);
  localStorage.setItem(recentKey, JSON.stringify(list.slice(0, 20)));
}

function showRecent(editor) {
  const ol = document.getElementById("recent");
  if (!ol) return;
  ol.replaceChildren();
  for (const q of recentList()) {
    const li = document.createElement("li");
    li.textContent = q;
    li.title = "put this query in the editor";
    li.addEventListener("click", () => { editor.value = q; editor.focus(); updateDownloads(editor); });
    ol.appendChild(li);
  }
}

function sqlURL(q, format, limit) {
  const p = new URLSearchParams({ q: q, format: format });
  if (limit) p.set("limit", String(limit));
  return "/v1/sql?" + p.toString();
}

function updateDownloads(editor) {
  for (const f of ["csv", "parquet", "arrow"]) {
    const a = document.getElementById("dl-" + f);
    if (a) a.href = sqlURL(editor.value, f);
  }
}

async function runSQL(editor) {
  const status = document.getElementById("sql-status");
  const table = document.getElementById("result");
  const q = editor.value;
  status.className = "muted";
  status.textContent = "running…";
  table.replaceChildren();
  let resp;
  try {
    resp = await fetch(sqlURL(q, "json", 1000), { headers: { Accept: "application/json" }, credentials: "same-origin" });
  } catch (e) {
    status.className = "error";
    status.textContent = "request failed: " + e;
    return;
  }
  const text = await resp.text();
  if (!resp.ok) {
    let msg = text;
    try { const b = JSON.parse(text); msg = b.kind + ": " + b.error; } catch (e) { /* not JSON: show it as it came */ }
    status.className = "error";
    status.id = "sql-status";
    status.textContent = msg;
    return;
  }
  remember(q);
  showRecent(editor);
  let cols = [];
  try { cols = JSON.parse(resp.headers.get("X-Ditto-Columns") || "[]"); } catch (e) { cols = []; }
  let rows = [];
  try { rows = JSON.parse(text); } catch (e) { status.className = "error"; status.textContent = "the answer is not JSON: " + e; return; }
  const thead = table.createTHead().insertRow();
  for (const c of cols) {
    const th = document.createElement("th");
    th.textContent = c.name;
    th.title = c.type;
    thead.appendChild(th);
  }
  const body = table.createTBody();
  for (const r of rows) {
    const tr = body.insertRow();
    for (const c of cols) {
      const td = tr.insertCell();
      const v = r[c.name];
      td.textContent = v === null || v === undefined ? "NULL" : (typeof v === "object" ? JSON.stringify(v) : String(v));
      if (typeof v === "number") td.className = "num";
    }
  }
  const n = resp.headers.get("X-Ditto-Row-Count") || String(rows.length);
  const cut = resp.headers.get("X-Ditto-Truncated") === "true";
  const ms = resp.headers.get("X-Ditto-Elapsed-Ms");
  status.className = "muted";
  status.textContent = n + " rows" + (cut ? " (cut by the " + (resp.headers.get("X-Ditto-Truncated-By") || "row") + " limit; download for more)" : "") + (ms ? " in " + ms + " ms" : "");
}

function sqlPage() {
  const form = document.getElementById("sql-form");
  if (!form) return;
  const editor = document.getElementById("sql");
  form.addEventListener("submit", ev => { ev.preventDefault(); runSQL(editor); });
  editor.addEventListener("keydown", ev => {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); runSQL(editor); }
  });
  editor.addEventListener("input", () => updateDownloads(editor));
  document.querySelectorAll("#schema [data-insert]").forEach(el => {
    el.addEventListener("dblclick", () => {
      const s = editor.selectionStart, e = editor.selectionEnd, t = el.dataset.insert;
      editor.value = editor.value.slice(0, s) + t + editor.value.slice(e);
      editor.focus();
      editor.selectionStart = editor.selectionEnd = s + t.length;
      updateDownloads(editor);
    });
  });
  updateDownloads(editor);
  showRecent(editor);
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("table.sortable").forEach(makeSortable);
  const studies = document.getElementById("studies");
  if (studies && studies.dataset.live) liveStudies(studies);
  comparisonsFilter();
  sqlPage();
});
