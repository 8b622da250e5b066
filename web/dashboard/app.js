// gmq's dashboard: pages of their own under the URL's #, each refreshed from
// the HTTP API every two seconds:
//   #/                         the overview (?page=N: the Nth 100 topics)
//   #/topics/T/STATE           a topic's jobs in one state (ready, delayed,
//                              reserved, buried, dead, completed,
//                              cancelled), 50 a page (?page=N)
//   #/topics/T/live            a topic's events as they happen (live.js)
//   #/jobs/ID                  one job
//   #/schedules                the cron schedules (schedules.js)
//   #/batches, #/batches/ID    the batches, newest first (?page=N), and
//                              one batch (batches.js)
// The back button and a reload keep the page. parts.js holds the helpers.
"use strict";

const POLL_MS = 2000;
const TOPIC_PAGE = 100;    // topics per page: never load them all
const JOB_PAGE = 50;       // jobs per page of a topic's list
const WINDOW_MS = 3600e3;  // the main chart and the cards' sparklines: the last hour (from the server's history)
const TOPIC_WINDOW_MS = 300e3; // a topic's sparkline: the last 5 minutes (from the brokers' samples, then this page's)
const STATES = ["ready", "delayed", "reserved", "buried", "dead", "completed", "cancelled"];
// {t, push, pop, fail, ready, delayed, reserved, buried, dead}, server-wide
// (the brokers' samples count no completed or cancelled jobs: their cards
// have no sparkline)
const serverHistory = [];
const topicHistory = new Map(); // topic -> [{t, push, pop, ack, fail}]
const asked = new Set();       // topics whose samples the brokers were asked for (once each)
const fromBrokers = new Set(); // topics whose sparkline started from them
let view = {name: "overview", page: 1}; // the page shown (parseRoute)
let shown = 0; // counts the pages shown, so that an answer for a page left is dropped

async function api(method, path, body) {
  const opts = {method, headers: {}, credentials: "same-origin"};
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const resp = await fetch("/api/v1" + path, opts);
  // The login form carries the page's # through the sign-in, back here.
  if (resp.status === 401) { location.href = "/dashboard/login" + location.hash; throw new Error("sign in"); }
  const data = resp.status === 204 ? null : await resp.json();
  if (!resp.ok) throw new Error(data && data.error ? data.error : resp.statusText);
  return data;
}

const enc = encodeURIComponent;
const topicHref = (topic, state = "ready", page = 1) => `#/topics/${enc(topic)}/${state}${page > 1 ? `?page=${page}` : ""}`;
const jobHref = id => `#/jobs/${enc(id)}`;

// parseRoute reads the page to show from the URL's #.
function parseRoute() {
  const [path, query = ""] = location.hash.replace(/^#/, "").split("?");
  const page = Math.max(1, Number.parseInt(new URLSearchParams(query).get("page"), 10) || 1);
  let parts;
  try { parts = path.split("/").filter(Boolean).map(decodeURIComponent); } catch { parts = []; }
  if (parts[0] === "topics" && (parts.length === 2 || (parts.length === 3 && (STATES.includes(parts[2]) || parts[2] === "live")))) {
    return {name: "topic", topic: parts[1], state: parts[2] || "ready", page};
  }
  if (parts[0] === "jobs" && parts.length === 2) return {name: "job", id: parts[1]};
  if (parts[0] === "schedules" && parts.length === 1) return {name: "schedules"};
  if (parts[0] === "batches" && parts.length === 1) return {name: "batches", page};
  if (parts[0] === "batches" && parts.length === 2) return {name: "batch", id: parts[1]};
  return {name: "overview", page};
}

// navigate shows the page the URL names: it takes the main area's place,
// scrolled to its top, and its heading takes the focus (but the overview's
// as the dashboard opens: moved is false then).
async function navigate(moved) {
  view = parseRoute();
  const n = ++shown;
  for (const v of document.querySelectorAll(".view")) v.hidden = v.id !== `view-${view.name}`;
  document.getElementById("nav-overview").toggleAttribute("aria-current", view.name === "overview");
  document.getElementById("nav-schedules").toggleAttribute("aria-current", view.name === "schedules");
  document.getElementById("nav-batches").toggleAttribute("aria-current", view.name === "batches" || view.name === "batch");
  if (view.name === "topic") startTopic(view);
  if (view.name === "job") startJob(view);
  showLive(view); // opens the live tail's stream, or closes it
  await refresh();
  if (n !== shown) return;
  window.scrollTo(0, 0);
  if (moved || view.name !== "overview") document.querySelector(`#view-${view.name} h2[tabindex]`).focus({preventScroll: true});
}

let refreshing = 0; // refreshes under way: a poll waits for them

// refresh reloads the page shown, and the stats every page's header and
// banner use.
async function refresh() {
  refreshing++;
  const v = view, n = shown;
  try {
    const pages = {overview: refreshOverview, topic: refreshTopic, job: refreshJob, schedules: refreshSchedules,
      batches: refreshBatches, batch: refreshBatch};
    const [stats] = await Promise.all([api("GET", "/stats"), pages[v.name](v, n)]);
    renderStats(stats);
    const status = document.getElementById("status");
    status.textContent = "live";
    status.title = `updated ${when(Date.now())}`;
    status.className = "status ok";
  } catch (e) {
    setText("status", `error: ${e.message}`);
    document.getElementById("status").className = "status bad";
  } finally {
    refreshing--;
  }
}

// act asks before it runs an action (confirmText says what it will do),
// then refreshes the page. A refusal is told in an alert, as the question
// was asked: the page's own error line is the refreshes' and would lose it.
async function act(confirmText, run) {
  if (!confirm(confirmText)) return;
  try {
    await run();
  } catch (e) {
    alert(e.message);
  }
  await refresh();
}

// actionButton's question is on it (data-ask), so that a refresh keeps a
// button (replaceRows) only while it would still do the same: "Kick
// buried" asks, and kicks, the count it was made with.
function actionButton(label, cls, confirmText, run) {
  const b = el("button", label, cls);
  b.dataset.ask = confirmText;
  b.addEventListener("click", () => act(confirmText, run));
  return b;
}

// ---- the overview ----

async function refreshOverview(v, n) {
  const [topics, buckets, redis] = await Promise.all([
    api("GET", `/topics?offset=${(v.page - 1) * TOPIC_PAGE}&limit=${TOPIC_PAGE}`), api("GET", "/buckets"), api("GET", "/redis")]);
  if (n !== shown) return;
  await startTopics(topics.topics);
  if (n !== shown) return;
  renderTopics(topics, v.page);
  renderBuckets(buckets);
  renderRedis(redis);
}

// startTopics starts the sparklines of the topics shown for the first time
// from the brokers' samples of their last 5 minutes (GET /api/v1/history
// ?topic=…), so that a topic busy before the page opened shows it at once.
// The brokers sample only the first 100 topics (the first page); other
// topics' sparklines fill as the page polls. A topic that came to be within
// the samples' window counted from zero then: that is its first point, so
// that what it did before its first sample shows.
async function startTopics(topics) {
  const born = new Map(topics.filter(t => t.created).map(t => [t.name, Date.parse(t.created)]));
  const fresh = topics.map(t => t.name).filter(name => !asked.has(name));
  if (!fresh.length) return;
  for (const name of fresh) asked.add(name);
  let h;
  try {
    h = await api("GET", "/history?" + fresh.map(name => `topic=${enc(name)}`).join("&"));
  } catch (e) { return; } // no history: the sparklines fill as the page polls
  for (const [name, samples] of Object.entries(h.topics || {})) {
    const hist = topicHistory.get(name) || [];
    const first = hist.length ? hist[0].t : Infinity;
    const older = samples.filter(s => s.t < first).map(s => ({t: s.t, push: s.pushed, pop: s.reserved, ack: s.deleted, fail: s.failed}));
    if (!older.length) continue;
    const at = born.get(name);
    if (at && at < older[0].t && at > Date.now() - TOPIC_WINDOW_MS) older.unshift({t: at, push: 0, pop: 0, ack: 0, fail: 0});
    topicHistory.set(name, older.concat(hist));
    fromBrokers.add(name);
  }
}

function renderStats(stats) {
  const state = document.getElementById("s-state");
  setValue("s-state", stats.status);
  state.className = stats.status === "up" ? "value" : "value warn";
  setValue("s-version", stats.version);
  setValue("s-uptime", duration(stats.uptime));
  setValue("s-ready", stats.current_jobs_ready);
  setValue("s-delayed", stats.current_jobs_delayed);
  setValue("s-reserved", stats.current_jobs_reserved);
  setValue("s-buried", stats.current_jobs_buried);
  setValue("s-dead", stats.current_jobs_dead);
  setValue("s-completed", stats.current_jobs_completed);
  setValue("s-cancelled", stats.current_jobs_cancelled ?? "–");
  setValue("s-total", stats.total_jobs);
  setValue("s-waiting", stats.current_waiting);
  setValue("s-end-waits", stats.current_end_waits ?? "–");
  // A no-break space in each "name count", so the list wraps between front ends only.
  setValue("s-conns", Object.entries(stats.connections).map(([k, v]) => `${k}\u00a0${v}`).join(" · ") || "–");
  const lost = document.getElementById("data-lost");
  lost.hidden = !stats.store_data_lost;
  if (stats.store_data_lost) {
    lost.textContent = `Redis lost gmq's data ${stats.store_data_lost === 1 ? "once" : stats.store_data_lost + " times"} while this broker ran ` +
      `(last at ${when(stats.store_data_lost_at)}): the jobs it held are gone. ` +
      "Turn on AOF (appendonly yes) so that a restart keeps them; see the broker's log.";
  }
  const migrating = document.getElementById("migrating");
  migrating.hidden = stats.store_migrated !== false;
  if (stats.store_migrated === false) {
    migrating.textContent = `The store is moving to format ${stats.store_format}: ${stats.store_bodies_migrated} bodies moved ` +
      "into their records by this broker so far. Jobs are served meanwhile (docs/operations.md, \"Upgrades\").";
  }
  remember(serverHistory, {t: Date.now(), push: stats.total_jobs, pop: stats.total_reserves, fail: stats.total_failures,
    ready: stats.current_jobs_ready, delayed: stats.current_jobs_delayed, reserved: stats.current_jobs_reserved,
    buried: stats.current_jobs_buried, dead: stats.current_jobs_dead}, WINDOW_MS);
  drawCharts();
}

// drawCharts draws the main chart and each count's sparkline in its card,
// over the last hour, or since the first sample when that is later (a
// broker started 5 minutes ago fills the width with them).
function drawCharts() {
  const span = Math.min(WINDOW_MS, Math.max(10e3, Date.now() - (serverHistory.length ? serverHistory[0].t : 0)));
  const top = drawLines(document.getElementById("chart"), serverHistory, 600, 120, span, ["push", "pop", "fail"]);
  setText("chart-top", `${top.toFixed(1)}/s`);
  setText("chart-span", span >= WINDOW_MS ? "last hour" : span < 90e3 ? `last ${Math.round(span / 1e3)} s` : `last ${Math.round(span / 60e3)} min`);
  for (const card of document.querySelectorAll(".card[data-gauge]")) {
    const key = card.dataset.gauge;
    let svg = card.querySelector("svg");
    if (!svg) card.appendChild(svg = sparkSVG(100, 20, `${key} jobs, last hour`));
    drawGauge(svg, serverHistory, key, 100, 20, span);
  }
}

function renderRedis(redis) {
  setValue("s-memory", bytes(redis.used_memory));
  setValue("s-redis", redis.url || "–");
  setValue("s-rtt", `${redis.rtt_ms.toFixed(2)} ms`);
  replaceRows(document.querySelector("#nodes tbody"), (redis.nodes || []).map(n => {
    const tr = el("tr");
    for (const v of [n.addr, n.error || n.role, n.used_memory ? bytes(n.used_memory) : "–",
                     n.rtt_ms !== undefined ? `${n.rtt_ms.toFixed(2)} ms` : "–", n.slots || "–"]) tr.appendChild(el("td", v));
    return tr;
  }));
}

function renderTopics(list, page) {
  const pages = Math.max(1, Math.ceil(list.total / TOPIC_PAGE));
  if (page > pages) { location.replace(pages > 1 ? `#/?page=${pages}` : "#/"); return; }
  const now = Date.now();
  replaceRows(document.querySelector("#topics tbody"), list.topics.map(t => {
    const hist = topicHistory.get(t.name) || [];
    remember(hist, {t: now, push: t.total_jobs, pop: t.total_reserves, ack: t.total_deletes, fail: t.total_failures}, TOPIC_WINDOW_MS);
    topicHistory.set(t.name, hist);
    return topicRow(t, hist);
  }));
  for (const [name, hist] of topicHistory) { // forget the topics of other pages once their samples are old
    if (hist[hist.length - 1].t < now - TOPIC_WINDOW_MS) {
      topicHistory.delete(name);
      asked.delete(name); // shown again, it asks the brokers again
      fromBrokers.delete(name);
    }
  }
  setText("t-count", `${list.total} topics`);
  renderPager(document.getElementById("topics-pager"), list.total, page, TOPIC_PAGE, p => p > 1 ? `#/?page=${p}` : "#/");
}

// topicRow is a topic's row: its name (a link to its page) over its
// settings, its counts (each a link to its jobs in that state), rates,
// latency, sparkline and actions.
function topicRow(t, hist) {
  const tr = el("tr");
  tr.dataset.topic = t.name;
  const name = el("td", undefined, "name");
  name.appendChild(link(t.name, topicHref(t.name)));
  const meta = [[limits(t.settings || {}), "limits"], [flow(t), "flow"], [fanout(t), "fanout"],
                [t.paused ? `paused, ${Math.ceil(t.pause_time_left)}s left` : "", "paused"], [delivery(t), "delivery"]];
  for (const [text, cls] of meta) if (text) name.appendChild(el("div", text, `meta ${cls}`));
  const last = name.querySelector(".delivery");
  if (last && t.delivery.last_error) last.title = `last failure (${t.delivery.last_error_at}): ${t.delivery.last_error}`;
  tr.appendChild(name);
  for (const k of STATES) {
    const td = el("td", undefined, `n ${k}`);
    td.appendChild(link(t[k], topicHref(t.name, k)));
    tr.appendChild(td);
  }
  tr.appendChild(el("td", t.ready > 0 ? duration(t.ready_age) : "–", "latency"));
  const activity = el("td", undefined, "activity");
  const spark = activity.appendChild(sparkSVG(120, 24, `${t.name}: push and pop, last 5 minutes`));
  if (hist.length < 2) {
    spark.classList.add("empty");
  } else {
    const span = Math.min(TOPIC_WINDOW_MS, Math.max(10e3, hist[hist.length - 1].t - hist[0].t)); // as drawCharts
    drawLines(spark, hist, 120, 24, span, ["push", "pop"]);
  }
  spark.appendChild(document.createElementNS(SVG, "title")).textContent = (hist.length < 2 ? "no rate yet: " : "") + sparkSource(t.name);
  activity.appendChild(el("div", topicRates(hist), "rates"));
  tr.appendChild(activity);
  tr.appendChild(topicActions(t));
  return tr;
}

// sparkSource says where a topic's sparkline comes from (its tooltip).
function sparkSource(name) {
  return fromBrokers.has(name)
    ? "push and pop, last 5 minutes: from the brokers' samples (every 5 s, of the first 100 topics), then this page's (every 2 s)"
    : "push and pop since this page opened, sampled by it every 2 s: the brokers keep the last 5 minutes of the first 100 topics only, so this one fills as the page polls";
}

function topicActions(t) {
  const td = el("td", undefined, "actions");
  const box = td.appendChild(el("div", undefined, "buttons"));
  const path = `/topics/${enc(t.name)}`;
  if (t.buried > 0) {
    box.appendChild(actionButton("Kick buried", "kick", `Kick the ${t.buried} buried jobs of ${t.name}? They become ready.`,
      () => api("POST", `${path}/kick`, {bound: t.buried})));
  }
  box.appendChild(t.paused
    ? actionButton("Resume", "resume", `Resume ${t.name}?`, () => api("POST", `${path}/pause`, {seconds: 0}))
    : actionButton("Pause 1h", "pause", `Pause ${t.name} for an hour? Pops skip it meanwhile.`,
        () => api("POST", `${path}/pause`, {seconds: 3600})));
  return td;
}

// limits describes a topic's settings in a few words ("" when none is set).
function limits(s) {
  const parts = [];
  if (s.max_items) parts.push(`≤ ${s.max_items} jobs`);
  if (s.max_size) parts.push(`≤ ${bytes(s.max_size)}`);
  if (s.max_item_size) parts.push(`items ≤ ${bytes(s.max_item_size)}`);
  if (s.discard_old_when_full) parts.push("drops oldest when full");
  if (s.max_age) parts.push(`expires after ${s.max_age}s`);
  if (s.expire_to) parts.push(`expired → ${s.expire_to}`);
  if (s.fanout_only) parts.push("fanout only");
  if (s.max_queue_age) parts.push(`forgotten ${s.max_queue_age}s after birth when empty`);
  if (s.rate) parts.push(`≤ ${s.rate}/s` + (s.burst > 1 ? ` (burst ${s.burst})` : ""));
  if (s.max_reserved) parts.push(`≤ ${s.max_reserved} reserved`);
  if (s.group_max_reserved) parts.push(`≤ ${s.group_max_reserved} reserved a group`);
  if (s.group_rate) parts.push(`≤ ${s.group_rate}/s a group`);
  if (s.keep_completed) parts.push(`keeps completed ${s.keep_completed}s`);
  return parts.join(" · ");
}

// flow says what a topic's limits hold now: its rate's tokens and the pops
// they held back ("" for a topic without limits that never held one back).
function flow(t) {
  const parts = [];
  if (t.tokens !== undefined) parts.push(t.tokens === 1 ? "1 token" : `${t.tokens} tokens`);
  if (t.total_limited) parts.push(`held back ${duration(t.limited_seconds || 0)} (${t.total_limited} looks)`);
  return parts.join(" · ");
}

// delivery describes this broker's HTTP push deliveries of a topic
// (docs/workflows.md): where to, how many and how they ended, the mean
// time ("" when this broker has delivered none of it).
function delivery(t) {
  const d = t.delivery;
  if (!d) return "";
  const parts = [`→ ${(t.settings || {}).deliver_to || "(deliver_to removed)"}`, `${d.sent} sent`, `${d.acked} acked`];
  if (d.released) parts.push(`${d.released} released`);
  if (d.failed) parts.push(`${d.failed} failed`);
  if (d.in_flight) parts.push(`${d.in_flight} open`);
  if (d.sent) parts.push(`${Math.round(d.mean_latency * 1000)} ms mean`);
  return parts.join(" · ");
}

// fanout describes a topic's fanout children and its expired count.
function fanout(t) {
  const parts = [];
  if (t.children && t.children.length) parts.push(`→ ${t.children.join(", ")}`);
  if (t.total_expired) parts.push(`${t.total_expired} expired`);
  return parts.join(" · ");
}

// topicRates is a topic's push, pop, ack and fail rates per second over its
// last 10 s of samples ("–" until there are two).
function topicRates(hist) {
  const last = hist[hist.length - 1];
  let first = hist.length > 1 ? hist[hist.length - 2] : null;
  for (const s of hist) { if (s.t >= last.t - 10000) { first = s; break; } }
  if (!first || first === last) return "–";
  const dt = (last.t - first.t) / 1000 || 1;
  const r = k => Math.max(0, ((last[k] || 0) - (first[k] || 0)) / dt).toFixed(1);
  return `push ${r("push")} · pop ${r("pop")} · ack ${r("ack")} · fail ${r("fail")}`;
}

function renderBuckets(data) {
  replaceRows(document.querySelector("#buckets tbody"), data.buckets.map(b => {
    const tr = el("tr");
    tr.appendChild(el("td", b.bucket));
    tr.appendChild(el("td", b.topics));
    tr.appendChild(timeCell(b.next_due, "due"));
    tr.appendChild(el("td", b.node || "–", "node"));
    return tr;
  }));
}

// ---- wiring ----

document.getElementById("lookup").addEventListener("submit", ev => {
  ev.preventDefault();
  const id = document.getElementById("job-id").value.trim();
  if (id) location.hash = jobHref(id);
});
document.getElementById("set-status").addEventListener("change", ev => {
  const status = ev.target.value;
  ev.target.value = "";
  if (status) act(`Set the server status of every broker on this Redis to ${status}?`, () => api("PUT", "/status", {status}));
});
wireJobPage();
wireBatchPage();
wireLive();

// start shows "Sign out" only when the broker requires a token (it says so
// in <html data-auth>), starts the chart and the cards' sparklines from the
// server's history (the last hour, sampled by the brokers into Redis), so a
// page opened now shows what happened before, then shows the page the URL
// names and refreshes it every POLL_MS.
async function start() {
  document.getElementById("logout").hidden = document.documentElement.dataset.auth !== "token";
  try {
    const h = await api("GET", "/history");
    for (const s of h.samples) {
      serverHistory.push({t: s.t, push: s.pushed, pop: s.reserved, fail: s.failed, ready: s.ready, delayed: s.delayed,
        reserved: s.reserved_now, buried: s.buried, dead: s.dead});
    }
  } catch (e) { /* no history yet: the charts fill as the page polls */ }
  window.addEventListener("hashchange", () => navigate(true));
  await navigate(false);
  setInterval(() => { if (!refreshing) refresh(); }, POLL_MS);
}
start();
