// gmq's dashboard: polls the HTTP API every two seconds. Every value from the
// server is written with textContent, never as HTML, so a job body holding
// markup shows as text.
"use strict";

const POLL_MS = 2000;
const PAGE = 100;          // topics per page: never load them all
const WINDOW_MS = 3600e3;  // the main chart: the last hour (seeded from the server's history)
const TOPIC_WINDOW_MS = 300e3; // a topic's sparkline: the last 5 minutes
let offset = 0;
const serverHistory = [];        // {t, push, pop, fail} totals, server-wide
let deadTopic = "";        // the topic whose dead jobs are shown
const JOB_PAGE = 50;       // jobs per page of a job list
const jobList = {topic: "", state: "ready", offset: 0}; // the job list shown
const topicHistory = new Map(); // topic -> [{t, push, pop}]

async function api(method, path, body) {
  const opts = {method, headers: {}, credentials: "same-origin"};
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const resp = await fetch("/api/v1" + path, opts);
  if (resp.status === 401) { location.href = "/dashboard/login"; throw new Error("sign in"); }
  const data = resp.status === 204 ? null : await resp.json();
  if (!resp.ok) throw new Error(data && data.error ? data.error : resp.statusText);
  return data;
}

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function setText(id, v) { document.getElementById(id).textContent = String(v); }

function duration(s) {
  s = Math.floor(s);
  const d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
  return d ? `${d}d ${h}h` : h ? `${h}h ${m}m` : m ? `${m}m ${s % 60}s` : `${s}s`;
}

function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

// rates turns a list of {t, push, pop[, fail]} totals into per-second rates at each sample's time.
function rates(samples) {
  const out = [];
  const rate = (i, k) => Math.max(0, ((samples[i][k] || 0) - (samples[i - 1][k] || 0)) / ((samples[i].t - samples[i - 1].t) / 1000 || 1));
  for (let i = 1; i < samples.length; i++) out.push({t: samples[i].t, push: rate(i, "push"), pop: rate(i, "pop"), fail: rate(i, "fail")});
  return out;
}

// remember adds a sample and drops those older than the window.
function remember(list, sample, windowMs) {
  list.push(sample);
  while (list.length && list[0].t < sample.t - windowMs) list.shift();
}

// drawLines draws push and pop (and, on the main chart, failure) rates into
// an SVG, scaled to its viewBox: now at the right edge, windowMs wide.
function drawLines(svg, samples, w, h, windowMs) {
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  const r = rates(samples);
  const top = Math.max(1, ...r.map(x => Math.max(x.push, x.pop, x.fail)));
  const ns = "http://www.w3.org/2000/svg";
  const lines = w > 200 ? [["push", "push"], ["pop", "pop"], ["fail", "fail"]] : [["push", "push"], ["pop", "pop"]];
  const now = Date.now();
  for (const [key, cls] of lines) {
    const pts = r.map(x => `${(w - (now - x.t) / windowMs * w).toFixed(1)},${h - (x[key] / top) * (h - 4) - 2}`);
    const line = document.createElementNS(ns, "polyline");
    line.setAttribute("points", pts.join(" "));
    line.setAttribute("class", cls);
    svg.appendChild(line);
  }
  if (w > 200) { // the main chart: say what its top line means
    const label = document.createElementNS(ns, "text");
    label.setAttribute("x", "4"); label.setAttribute("y", "12");
    label.textContent = `${top.toFixed(1)}/s`;
    svg.appendChild(label);
  }
}

function actionButton(label, confirmText, run, cls) {
  const b = el("button", label, cls);
  b.addEventListener("click", async () => {
    if (!confirm(confirmText)) return;
    try { await run(); await refresh(); } catch (e) { alert(e.message); }
  });
  return b;
}

function renderTopics(list) {
  const tbody = document.querySelector("#topics tbody");
  const rows = [];
  const now = Date.now();
  for (const t of list.topics) {
    const hist = topicHistory.get(t.name) || [];
    remember(hist, {t: now, push: t.total_jobs, pop: t.total_reserves, ack: t.total_deletes, fail: t.total_failures}, TOPIC_WINDOW_MS);
    topicHistory.set(t.name, hist);
    const tr = el("tr");
    tr.dataset.topic = t.name;
    tr.appendChild(el("td", t.name, "name"));
    for (const k of ["ready", "delayed", "reserved", "buried", "dead"]) tr.appendChild(el("td", t[k], k));
    tr.appendChild(el("td", limits(t.settings || {}), "limits"));
    tr.appendChild(el("td", fanout(t), "fanout"));
    tr.appendChild(el("td", topicRates(hist), "rates"));
    tr.appendChild(el("td", t.ready > 0 ? duration(t.ready_age) : "–", "latency"));
    tr.appendChild(el("td", t.paused ? `${Math.ceil(t.pause_time_left)}s` : "no", "paused"));
    const spark = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    spark.setAttribute("viewBox", "0 0 120 24");
    spark.setAttribute("class", "spark");
    drawLines(spark, hist, 120, 24, TOPIC_WINDOW_MS);
    const sparkCell = el("td"); sparkCell.appendChild(spark); tr.appendChild(sparkCell);
    const actions = el("td", undefined, "actions");
    if (t.buried > 0) {
      actions.appendChild(actionButton("Kick buried", `Kick the ${t.buried} buried jobs of ${t.name}?`,
        () => api("POST", `/topics/${encodeURIComponent(t.name)}/kick`, {bound: t.buried}), "kick"));
    }
    const jobsButton = el("button", "Jobs", "jobs");
    jobsButton.addEventListener("click", () => { Object.assign(jobList, {topic: t.name, state: "ready", offset: 0}); showJobs(); });
    actions.appendChild(jobsButton);
    if (t.dead > 0) {
      const b = el("button", `Dead jobs (${t.dead})`, "dead");
      b.addEventListener("click", () => showDead(t.name));
      actions.appendChild(b);
    }
    actions.appendChild(t.paused
      ? actionButton("Resume", `Resume ${t.name}?`, () => api("POST", `/topics/${encodeURIComponent(t.name)}/pause`, {seconds: 0}), "resume")
      : actionButton("Pause 1h", `Pause ${t.name} for an hour? Pops skip it meanwhile.`,
          () => api("POST", `/topics/${encodeURIComponent(t.name)}/pause`, {seconds: 3600}), "pause"));
    tr.appendChild(actions);
    rows.push(tr);
  }
  tbody.replaceChildren(...rows);
  setText("t-count", `${list.total} topics`);
  setText("page", list.total ? `${offset + 1}–${Math.min(offset + PAGE, list.total)} of ${list.total}` : "");
  document.getElementById("prev").disabled = offset === 0;
  document.getElementById("next").disabled = offset + PAGE >= list.total;
}

// limits describes a topic's settings in a few words ("–" when none is set).
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
  return parts.join(" · ") || "–";
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

// fanout describes a topic's fanout children and its expired count.
function fanout(t) {
  const parts = [];
  if (t.children && t.children.length) parts.push(`→ ${t.children.join(", ")}`);
  if (t.total_expired) parts.push(`${t.total_expired} expired`);
  return parts.join(" · ") || "–";
}

function renderBuckets(data) {
  const rows = data.buckets.map(b => {
    const tr = el("tr");
    tr.appendChild(el("td", b.bucket));
    tr.appendChild(el("td", b.topics));
    tr.appendChild(el("td", b.next_due ? new Date(b.next_due).toLocaleTimeString() : "–"));
    tr.appendChild(el("td", b.node || "–", "node"));
    return tr;
  });
  document.querySelector("#buckets tbody").replaceChildren(...rows);
}

async function refresh() {
  try {
    const [stats, topics, buckets, redis] = await Promise.all([
      api("GET", "/stats"), api("GET", `/topics?offset=${offset}&limit=${PAGE}`), api("GET", "/buckets"), api("GET", "/redis")]);
    setText("s-state", stats.status);
    document.getElementById("s-state").className = stats.status === "up" ? "" : "warn";
    setText("s-version", stats.version);
    setText("s-uptime", duration(stats.uptime));
    setText("s-ready", stats.current_jobs_ready);
    setText("s-delayed", stats.current_jobs_delayed);
    setText("s-reserved", stats.current_jobs_reserved);
    setText("s-buried", stats.current_jobs_buried);
    setText("s-dead", stats.current_jobs_dead);
    setText("s-total", stats.total_jobs);
    setText("s-waiting", stats.current_waiting);
    setText("s-conns", Object.entries(stats.connections).map(([k, v]) => `${k} ${v}`).join(" · ") || "–");
    const lost = document.getElementById("data-lost");
    lost.hidden = !stats.store_data_lost;
    if (stats.store_data_lost) {
      lost.textContent = `Redis lost gmq's data ${stats.store_data_lost === 1 ? "once" : stats.store_data_lost + " times"} while this broker ran ` +
        `(last at ${new Date(stats.store_data_lost_at).toLocaleString()}): the jobs it held are gone. ` +
        "Turn on AOF (appendonly yes) so that a restart keeps them; see the broker's log.";
    }
    setText("s-memory", bytes(redis.used_memory));
    setText("s-redis", redis.url || "–");
    document.querySelector("#nodes tbody").replaceChildren(...(redis.nodes || []).map(n => {
      const tr = el("tr");
      for (const v of [n.addr, n.error || n.role, n.used_memory ? bytes(n.used_memory) : "–",
                       n.rtt_ms !== undefined ? `${n.rtt_ms.toFixed(2)} ms` : "–", n.slots || "–"]) tr.appendChild(el("td", v));
      return tr;
    }));
    setText("s-rtt", `${redis.rtt_ms.toFixed(2)} ms`);
    remember(serverHistory, {t: Date.now(), push: stats.total_jobs, pop: stats.total_reserves, fail: stats.total_failures}, WINDOW_MS);
    drawLines(document.getElementById("chart"), serverHistory, 600, 120, WINDOW_MS);
    renderTopics(topics);
    renderBuckets(buckets);
    setText("status", `live · ${new Date().toLocaleTimeString()}`);
    document.getElementById("status").className = "status ok";
  } catch (e) {
    setText("status", `error: ${e.message}`);
    document.getElementById("status").className = "status bad";
  }
}

// showJobs shows a page of the chosen topic's jobs in the chosen state,
// bodies as text, each row with the actions its state allows.
async function showJobs() {
  const {topic, state, offset} = jobList;
  setText("jobs-error", "");
  try {
    const list = await api("GET", `/topics/${encodeURIComponent(topic)}/jobs?state=${state}&offset=${offset}&limit=${JOB_PAGE}`);
    setText("jobs-topic", topic);
    setText("jobs-count", `${list.total} ${state}`);
    for (const b of document.querySelectorAll("#jobs .tabs button[data-state]")) b.classList.toggle("on", b.dataset.state === state);
    const rows = list.jobs.map(j => {
      const tr = el("tr");
      tr.dataset.id = j.id;
      for (const [v, cls] of [[j.id, "id"], [j.priority, "priority"], [j.attempt, "attempt"], [j.failures, "failures"],
                              [duration(j.age), "age"], [j.due ? new Date(j.due).toLocaleTimeString() : "–", "due"], [j.body, "body"]]) {
        tr.appendChild(el("td", v, cls));
      }
      const actions = el("td", undefined, "actions");
      const path = `/jobs/${encodeURIComponent(j.id)}`;
      if (state === "buried" || state === "delayed" || state === "dead") {
        actions.appendChild(actionButton("Kick", `Kick job ${j.id}? It becomes ready.`, async () => { await api("POST", `${path}/kick`); await showJobs(); }, "kick"));
      }
      actions.appendChild(actionButton("Delete", `Delete job ${j.id}? This cannot be undone.`, async () => { await api("DELETE", path); await showJobs(); }, "danger delete"));
      tr.appendChild(actions);
      return tr;
    });
    document.querySelector("#job-list tbody").replaceChildren(...rows);
    setText("jobs-page", list.total ? `${offset + 1}–${Math.min(offset + JOB_PAGE, list.total)} of ${list.total}` : "");
    document.getElementById("jobs-prev").disabled = offset === 0;
    document.getElementById("jobs-next").disabled = offset + JOB_PAGE >= list.total;
    document.getElementById("jobs").hidden = false;
  } catch (e) {
    setText("jobs-error", e.message);
  }
}

for (const b of document.querySelectorAll("#jobs .tabs button[data-state]")) {
  b.addEventListener("click", () => { jobList.state = b.dataset.state; jobList.offset = 0; showJobs(); });
}
document.getElementById("jobs-prev").addEventListener("click", () => { jobList.offset = Math.max(0, jobList.offset - JOB_PAGE); showJobs(); });
document.getElementById("jobs-next").addEventListener("click", () => { jobList.offset += JOB_PAGE; showJobs(); });
document.getElementById("jobs-close").addEventListener("click", () => { document.getElementById("jobs").hidden = true; jobList.topic = ""; });

// showDead lists a topic's dead jobs (the oldest 100), each with a retry button.
async function showDead(topic) {
  deadTopic = topic;
  setText("dead-error", "");
  const path = `/topics/${encodeURIComponent(topic)}/dead`;
  try {
    const list = await api("GET", `${path}?limit=100`);
    setText("dead-topic", topic);
    setText("dead-count", `${list.total} dead`);
    const rows = list.jobs.map(j => {
      const tr = el("tr");
      tr.dataset.id = j.id;
      for (const [v, cls] of [[j.id, "id"], [j.failures, "failures"], [j.last_error, "last-error"],
                              [new Date(j.dead_at).toLocaleString(), "died"], [j.body_preview, "body"]]) tr.appendChild(el("td", v, cls));
      const actions = el("td", undefined, "actions");
      actions.appendChild(actionButton("Retry", `Retry dead job ${j.id}? It becomes ready, its failures forgotten.`,
        async () => { await api("POST", `${path}/retry`, {ids: [j.id]}); await showDead(topic); }, "retry"));
      tr.appendChild(actions);
      return tr;
    });
    document.querySelector("#dead-jobs tbody").replaceChildren(...rows);
    document.getElementById("dead").hidden = false;
  } catch (e) {
    setText("dead-error", e.message);
  }
}

document.getElementById("dead-retry-all").addEventListener("click", async () => {
  if (!deadTopic || !confirm(`Retry every dead job of ${deadTopic}?`)) return;
  try { await api("POST", `/topics/${encodeURIComponent(deadTopic)}/dead/retry`); await showDead(deadTopic); await refresh(); } catch (e) { setText("dead-error", e.message); }
});
document.getElementById("dead-delete-all").addEventListener("click", async () => {
  if (!deadTopic || !confirm(`Delete every dead job of ${deadTopic}? This cannot be undone.`)) return;
  try { await api("DELETE", `/topics/${encodeURIComponent(deadTopic)}/dead`); await showDead(deadTopic); await refresh(); } catch (e) { setText("dead-error", e.message); }
});
document.getElementById("dead-close").addEventListener("click", () => { document.getElementById("dead").hidden = true; deadTopic = ""; });

function showJob(job) {
  const dl = document.getElementById("job-fields");
  const fields = [["id", job.id], ["number", job.internal_id], ["topic", job.topic], ["state", job.state],
    ["priority", job.priority], ["delay", `${job.delay}s`], ["TTR", `${job.TTR}s`], ["attempt", job.attempt],
    ["reserves", job.reserves], ["timeouts", job.timeouts], ["releases", job.releases], ["buries", job.buries],
    ["kicks", job.kicks], ["failures", job.failures], ["last error", job.last_error || "–"],
    ["created", job.created], ["age", duration(job.age)], ["time left", `${job.time_left}s`]];
  dl.replaceChildren(...fields.flatMap(([k, v]) => [el("dt", k), el("dd", v, `f-${k.replace(" ", "-")}`)]));
  document.getElementById("job-body").textContent = job.body;
  document.getElementById("job").hidden = false;
  document.getElementById("job").dataset.id = job.id;
  document.getElementById("job-kick").disabled = !(job.state === "buried" || job.state === "delayed" || job.state === "dead");
}

async function lookup(id) {
  setText("job-error", "");
  try {
    showJob(await api("GET", `/jobs/${encodeURIComponent(id)}`));
  } catch (e) {
    document.getElementById("job").hidden = true;
    setText("job-error", e.message);
  }
}

document.getElementById("lookup").addEventListener("submit", ev => {
  ev.preventDefault();
  lookup(document.getElementById("job-id").value.trim());
});
document.getElementById("job-kick").addEventListener("click", async () => {
  const id = document.getElementById("job").dataset.id;
  if (!confirm(`Kick job ${id}?`)) return;
  try { await api("POST", `/jobs/${encodeURIComponent(id)}/kick`); await lookup(id); await refresh(); } catch (e) { setText("job-error", e.message); }
});
document.getElementById("job-delete").addEventListener("click", async () => {
  const id = document.getElementById("job").dataset.id;
  if (!confirm(`Delete job ${id}? This cannot be undone.`)) return;
  try { await api("DELETE", `/jobs/${encodeURIComponent(id)}`); await lookup(id); await refresh(); } catch (e) { setText("job-error", e.message); }
});
document.getElementById("set-status").addEventListener("change", async ev => {
  const status = ev.target.value;
  ev.target.value = "";
  if (!status || !confirm(`Set the server status of every broker on this Redis to ${status}?`)) return;
  try { await api("PUT", "/status", {status}); await refresh(); } catch (e) { alert(e.message); }
});
document.getElementById("prev").addEventListener("click", () => { offset = Math.max(0, offset - PAGE); refresh(); });
document.getElementById("next").addEventListener("click", () => { offset += PAGE; refresh(); });

// The chart starts from the server's history (the last hour, sampled by the
// brokers into Redis), so a page opened now shows what happened before.
async function start() {
  try {
    const h = await api("GET", "/history");
    for (const s of h.samples) serverHistory.push({t: s.t, push: s.pushed, pop: s.reserved, fail: s.failed});
  } catch (e) { /* no history yet: the chart fills as the page polls */ }
  await refresh();
  setInterval(refresh, POLL_MS);
}
start();
