// The status page of GET / on the admin listener: one HTML document with its CSS and script inline (no
// external assets), which fetches status.json every 2 s and draws it with DOM calls (text only, never
// markup from the data). Stable hooks for tests and scripts: each table has an id; a downstream's row
// carries data-downstream, data-status (ok, degraded, down) and data-breaker (closed, half_open, open,
// none); a route's row data-route; a recent degraded request's row data-request-id; a process figure's row
// data-key; #updated has data-state (loading, ok, error); #restart-pending, hidden unless the file holds
// settings only a restart applies, names them.

#include "gateway/server/status_page.hpp"

namespace gateway {

std::string_view status_page_html() {
  static constexpr std::string_view page = R"html(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>gateway status</title>
<style>
  :root { --bg: #f7f7f5; --fg: #1d1d1b; --muted: #6b6b66; --line: #deded8; --bad: #b3261e; --badbg: #fde7e5;
          --warn: #8a5a00; --warnbg: #fff3d6; --ok: #1e6b35; }
  * { box-sizing: border-box; }
  body { margin: 0; padding: 16px 24px; background: var(--bg); color: var(--fg);
         font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
  header { display: flex; flex-wrap: wrap; align-items: baseline; gap: 8px 24px; margin-bottom: 12px; }
  h1 { font-size: 20px; margin: 0; }
  h2 { font-size: 15px; margin: 20px 0 6px; }
  .muted { color: var(--muted); }
  #updated[data-state="error"] { color: var(--bad); font-weight: 600; }
  table { border-collapse: collapse; width: 100%; background: #fff; border: 1px solid var(--line); }
  th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
  th { font-weight: 600; background: #efefea; white-space: nowrap; }
  td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
  tr.bad td { background: var(--badbg); }
  tr.warn td { background: var(--warnbg); }
  .state { font-weight: 600; }
  .state.open, .state.down { color: var(--bad); }
  .state.half_open, .state.degraded { color: var(--warn); }
  .state.closed, .state.ok { color: var(--ok); }
  code { font: 12px/1.3 ui-monospace, "DejaVu Sans Mono", monospace; }
  .grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); gap: 0 24px; }
  .empty td { color: var(--muted); font-style: italic; }
  .pending { color: var(--warn); background: var(--warnbg); font-weight: 600; padding: 0 6px; }
</style>
</head>
<body>
<header>
  <h1>gateway status</h1>
  <span>configuration <code id="config-version">-</code></span>
  <span class="muted" id="config-reloads">-</span>
  <span class="pending" id="restart-pending" hidden></span>
  <span class="muted">window <span id="window">-</span></span>
  <span id="updated" data-state="loading">loading...</span>
</header>

<h2>Routes</h2>
<table id="routes">
  <thead><tr><th>route</th><th>method</th><th class="num">req/s</th><th class="num">P50</th>
  <th class="num">P99</th><th class="num">degraded</th><th class="num">5xx</th><th class="num">total</th></tr></thead>
  <tbody></tbody>
</table>

<h2>Downstreams</h2>
<table id="downstreams">
  <thead><tr><th>downstream</th><th>status</th><th>breaker</th><th class="num">calls/s</th>
  <th class="num">failed</th><th>outcomes</th><th class="num">P50</th><th class="num">P99</th>
  <th class="num">endpoints</th><th>pool</th></tr></thead>
  <tbody></tbody>
</table>

<div class="grid">
<div>
<h2>SQL semaphore</h2>
<table id="databases">
  <thead><tr><th>database</th><th class="num">permits</th><th class="num">available</th>
  <th class="num">waiting</th><th class="num">wait P99</th><th>pool</th></tr></thead>
  <tbody></tbody>
</table>
</div>
<div>
<h2>Process</h2>
<table id="process">
  <tbody></tbody>
</table>
</div>
</div>

<h2>Recent degraded requests <span class="muted" id="recent-count"></span></h2>
<table id="recent">
  <thead><tr><th>time</th><th>request id</th><th>route</th><th>calls that failed</th></tr></thead>
  <tbody></tbody>
</table>

<script>
"use strict";
const every = 2000;

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}
function ms(v) { return v === null || v === undefined ? "-" : (v < 10 ? v.toFixed(2) : v.toFixed(0)) + " ms"; }
function pct(v) { return v === null || v === undefined ? "-" : (100 * v).toFixed(1) + " %"; }
function rate(v) { return v < 10 ? v.toFixed(2) : v.toFixed(0); }
function bytes(v) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (v >= 1024 && i + 1 < units.length) { v /= 1024; ++i; }
  return (i ? v.toFixed(1) : v) + " " + units[i];
}
function when(t) { return new Date(t * 1000).toLocaleTimeString(); }
function fill(id, rows, columns, empty) {
  const body = document.querySelector("#" + id + " tbody");
  const out = Array.from(rows);
  if (out.length === 0 && empty) {
    const tr = el("tr", null, "empty");
    const td = el("td", empty);
    td.colSpan = columns;
    tr.appendChild(td);
    out.push(tr);
  }
  body.replaceChildren(...out);
}
function row(cells, cls) {
  const tr = el("tr", null, cls);
  for (const c of cells) tr.appendChild(c instanceof Node ? c : el("td", c));
  return tr;
}
function num(v) { return el("td", v, "num"); }
function state(v) { return el("td", v === null ? "none" : v, "state " + (v || "")); }

function render(s) {
  document.getElementById("config-version").textContent = s.config.version;
  document.getElementById("config-reloads").textContent =
    "applied " + when(s.config.last_reload) + ", reloads " + s.config.reloads.succeeded + " ok / " +
    s.config.reloads.failed + " failed";
  const pending = document.getElementById("restart-pending");
  pending.hidden = s.config.restart_pending.length === 0;
  pending.textContent = pending.hidden ? "" : "restart pending: " + s.config.restart_pending.join(", ");
  document.getElementById("window").textContent = s.window_seconds.toFixed(0) + " s";

  fill("routes", s.routes.map(r => {
    const tr = row([el("td", r.route), el("td", r.method), num(rate(r.rate)), num(ms(r.p50_ms)),
                    num(ms(r.p99_ms)), num(pct(r.degraded_share)), num(r.server_errors),
                    num(r.total.requests)], r.degraded > 0 ? "warn" : "");
    tr.dataset.route = r.route;
    tr.dataset.degraded = r.degraded;
    return tr;
  }), 8, "no routes");

  fill("downstreams", s.downstreams.map(d => {
    const outcomes = Object.entries(d.outcomes).filter(([, n]) => n > 0).map(([k, n]) => k + " " + n);
    const pool = d.pool ? "idle " + d.pool.idle + ", in use " + d.pool.in_use + ", broken " + d.pool.broken : "-";
    let endpoints = String(d.endpoints);
    const open = d.endpoint_breakers.filter(e => e.state !== "closed");
    if (open.length) endpoints += " (" + open.map(e => e.endpoint + " " + e.state).join(", ") + ")";
    const tr = row([el("td", d.name), state(d.status), state(d.breaker), num(rate(d.rate)),
                    num(pct(d.failure_share)), el("td", outcomes.join(", ") || "-"), num(ms(d.p50_ms)),
                    num(ms(d.p99_ms)), num(endpoints), el("td", pool)],
                   d.status === "down" ? "bad" : d.status === "degraded" ? "warn" : "");
    tr.dataset.downstream = d.name;
    tr.dataset.status = d.status;
    tr.dataset.breaker = d.breaker === null ? "none" : d.breaker;
    tr.children[2].classList.add("breaker");
    return tr;
  }), 10, "no downstreams");

  fill("databases", s.databases.map(b => {
    const tr = row([el("td", b.name), num(b.permits), num(b.available), num(b.waiting), num(ms(b.wait_p99_ms)),
                    el("td", "idle " + b.pool.idle + ", in use " + b.pool.in_use + ", broken " + b.pool.broken)],
                   b.waiting > 0 ? "warn" : "");
    tr.dataset.database = b.name;
    return tr;
  }), 6, "no SQL downstreams");

  const p = s.process;
  const shed = Object.values(p.shed).reduce((a, b) => a + b, 0);
  const figures = [
    ["io_threads", "I/O threads", p.io_threads],
    ["coroutines", "coroutines", p.coroutines],
    ["loop_lag", "event-loop lag P50 / P99", ms(p.loop_lag_p50_ms) + " / " + ms(p.loop_lag_p99_ms)],
    ["resident", "resident memory", bytes(p.resident_bytes)],
    ["buffered", "buffered / budget", bytes(p.buffered_bytes) + " / " + bytes(p.memory_budget_bytes)],
    ["open_connections", "open connections", p.open_connections],
    ["inflight", "in-flight requests", p.inflight],
    ["shed", "shed in window", shed],
    ["open_fds", "open files", p.open_fds],
    ["uptime", "up", (p.uptime_seconds / 60).toFixed(1) + " min"],
  ];
  fill("process", figures.map(([key, label, value]) => {
    const tr = row([el("th", label), num(value)]);
    tr.dataset.key = key;
    return tr;
  }));

  const recent = s.recent_degraded;
  document.getElementById("recent-count").textContent =
    "(" + recent.requests.length + " of " + recent.recorded + " since start, last " + recent.capacity + " kept)";
  fill("recent", recent.requests.map(r => {
    const calls = el("td");
    for (const c of r.calls) {
      const line = el("div");
      line.dataset.call = c.call;
      line.dataset.outcome = c.outcome;
      line.appendChild(el("b", c.call));
      line.appendChild(document.createTextNode(" " + c.outcome + (c.detail ? " (" + c.detail + ")" : "") +
                                               ", " + ms(c.latency_ms)));
      calls.appendChild(line);
    }
    const tr = row([el("td", when(r.time)), el("td", r.request_id, "id"), el("td", r.route), calls]);
    tr.dataset.requestId = r.request_id;
    return tr;
  }), 4, "none yet");
}

async function poll() {
  const shown = document.getElementById("updated");
  try {
    const res = await fetch("status.json", { cache: "no-store", credentials: "same-origin" });
    if (!res.ok) throw new Error("status.json answered " + res.status);
    render(await res.json());
    shown.textContent = "updated " + new Date().toLocaleTimeString();
    shown.dataset.state = "ok";
  } catch (e) {
    shown.textContent = "not updated: " + e.message;
    shown.dataset.state = "error";
  }
  setTimeout(poll, every);
}
poll();
</script>
</body>
</html>
)html";
  return page;
}

}  // namespace gateway
