// Package console is the analyzer's web console: server-rendered pages (html/template, a little
// JavaScript, every asset embedded) over the same read-only SQL path as the query API. Its
// pages:
//
//	/                          Studies: every study with live progress (Server-Sent Events)
//	/studies/{study}           Study: the cell table, each condition's harness components, the
//	                           comparisons (significant ones by default), the study's reports;
//	                           for a production study, its drift over time as a chart
//	/studies/{study}/cell      Cell (?task=&model=&condition=): the divergence view — runs
//	                           grouped by trace signature, lanes of tool calls step by step with
//	                           where each group parts from the modal one, the argument leaves
//	                           that vary per step, the distinct outputs
//	/studies/{study}/runs/{run} Run: the timeline of one attempt's events, a waterfall of its
//	                           model calls, the raw event JSON on demand
//	/compare                   Compare (?study=&a=&b=): two runs aligned step by step, the
//	                           first difference highlighted
//	/sql                       SQL: an editor over GET /v1/sql, the public tables and columns
//	                           of GET /v1/schema, downloads as CSV, Parquet or Arrow
//	/reports/                  the reports index and pages (package report's handler)
//
// # Security
//
// Every page shows data that agents and production traffic wrote: event payloads are hostile
// input. Pages are html/template (contextual escaping), the JavaScript writes text with
// textContent only, and every answer carries a Content-Security-Policy that allows nothing but
// this origin (no inline script, no remote origin). With a token, every page but the login form
// redirects to it; the form sets an HttpOnly, SameSite=Strict cookie holding an expiring HMAC
// of the token (never the token), and the console lets that cookie stand for the bearer header
// on the API and the reports, so the SQL page's fetches and downloads work from the browser
// while API clients keep sending the header.
//
// # Cost
//
// Pages read what they show with one to four statements (package queries, console_*.sql).
// The Study page's metrics and comparisons are package analysis's, rendered by package report
// with its one number formatter; computing them takes seconds on a large study, so they are
// computed in the background, cached per study and recomputed when the study's events move
// (the page shows the last result and says when it is being recomputed). Every answer
// carries Server-Timing with the time the server spent.
package console
