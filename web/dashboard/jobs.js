// The dashboard's pages of jobs: a topic's jobs in one state (#/topics/T/STATE)
// and one job (#/jobs/ID). app.js routes to them and refreshes them; a
// topic's live tail (#/topics/T/live) is live.js's, in the same page.
"use strict";

// The columns of a topic's list, by state.
const COLUMNS = {
  ready: ["id", "priority", "attempt", "failures", "created", "body"],
  delayed: ["id", "priority", "attempt", "failures", "created", "due", "body"],
  reserved: ["id", "priority", "attempt", "created", "ttr-ends", "body"],
  buried: ["id", "priority", "attempt", "failures", "created", "body"],
  dead: ["id", "failures", "errors", "died", "body"],
  completed: ["id", "attempt", "completed-at", "result", "body"],
  cancelled: ["id", "attempt", "cancelled-at", "progress", "body"],
};
const HEADINGS = {"ttr-ends": "TTR ends", "errors": "errors, newest first", "completed-at": "completed", "cancelled-at": "cancelled"};
// The end states: each listed by a route of its own (GET /topics/T/dead,
// /topics/T/completed, /topics/T/cancelled), its jobs pushed again or
// deleted all at once.
const ENDED = ["dead", "completed", "cancelled"];
// The states a job may be cancelled in: a waiting one ends at once, a
// reserved one at its consumer's next report.
const CANCELLABLE = ["delayed", "ready", "buried", "reserved"];

// startTopic readies a topic's page as it opens, before its jobs come: the
// last topic's rows must not show under this one's name.
function startTopic(v) {
  setText("topic-name", v.topic);
  setText("topic-count", "");
  setText("topic-error", "");
  document.querySelector("#job-list tbody").replaceChildren();
  const tail = v.state === "live"; // the live tail (live.js) in the jobs' place
  document.getElementById("topic-jobs").hidden = tail;
  document.getElementById("live").hidden = !tail;
  const head = el("tr");
  for (const col of tail ? [] : [...COLUMNS[v.state], ""]) head.appendChild(el("th", HEADINGS[col] || col, col));
  document.querySelector("#job-list thead").replaceChildren(head);
  for (const a of document.querySelectorAll("#topic-tabs a[data-state]")) {
    a.href = topicHref(v.topic, a.dataset.state);
    a.classList.toggle("on", a.dataset.state === v.state);
    if (a.dataset.state === v.state) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  for (const state of ENDED) document.getElementById(`${state}-actions`).hidden = true;
  if (document.getElementById("limits").dataset.topic !== v.topic) { // another topic's: not this one's edits
    delete document.getElementById("limits").dataset.dirty;
    document.getElementById("limits").dataset.topic = v.topic;
  }
  document.title = `${v.topic}: ${v.state} · gmq`;
}

// refreshTopic shows a page of a topic's jobs in one state, bodies as text,
// each row with the actions its state allows, and the topic's counts.
async function refreshTopic(v, n) {
  if (v.state === "live") return refreshLive(v, n);
  const offset = (v.page - 1) * JOB_PAGE, path = `/topics/${enc(v.topic)}`;
  let list, counts;
  try {
    [list, counts] = await Promise.all([
      api("GET", ENDED.includes(v.state) ? `${path}/${v.state}?offset=${offset}&limit=${JOB_PAGE}`
        : `${path}/jobs?state=${v.state}&offset=${offset}&limit=${JOB_PAGE}`),
      api("GET", path).catch(() => null)]); // the counts are a nicety: a list without them still shows
  } catch (e) {
    if (n === shown) setText("topic-error", e.message);
    return;
  }
  if (n !== shown) return;
  const pages = Math.max(1, Math.ceil(list.total / JOB_PAGE));
  if (v.page > pages) { location.replace(topicHref(v.topic, v.state, pages)); return; } // the last page emptied
  setText("topic-error", "");
  setText("topic-count", `${list.total} ${v.state}`);
  showCounts(counts);
  replaceRows(document.querySelector("#job-list tbody"), list.jobs.map(j => jobRow(j, v)));
  const empty = document.getElementById("jobs-empty");
  empty.hidden = list.total > 0;
  empty.textContent = `${v.topic} has no ${v.state} job.` + (counts && !(counts.settings || {}).keep_completed ? KEEPS_NONE[v.state] || "" : "");
  for (const state of ENDED) document.getElementById(`${state}-actions`).hidden = v.state !== state || list.total === 0;
  for (const id of ["jobs-pager-top", "jobs-pager"]) { // a page of 50 is long: a pager above it and below
    renderPager(document.getElementById(id), list.total, v.page, JOB_PAGE, p => topicHref(v.topic, v.state, p));
  }
}

// showCounts writes the topic's count of each state in its tab, and its
// limits in their form (counts null: the counts could not be read).
function showCounts(counts) {
  for (const n of document.querySelectorAll("#topic-tabs a[data-state] .n")) {
    n.textContent = counts ? String(counts[n.parentElement.dataset.state]) : "";
  }
  if (counts) showLimits(counts);
}

// KEEPS_NONE says why an end state's list is empty on a topic that keeps
// no ended job (its keep_completed is 0).
const KEEPS_NONE = {
  completed: " Its keep_completed is 0: an ack deletes its job, unless the ack gave a result (kept for keep_results) or the push asked to keep it (docs/outcomes.md).",
  cancelled: " Its keep_completed is 0: a cancel deletes its job, unless the push asked to keep it (docs/outcomes.md).",
};

function jobRow(j, v) {
  const tr = el("tr");
  tr.dataset.id = j.id;
  for (const col of COLUMNS[v.state]) tr.appendChild(jobCell(j, col));
  const td = el("td", undefined, "actions");
  const box = td.appendChild(el("div", undefined, "buttons"));
  for (const b of jobActions(j, v.topic, v.state)) box.appendChild(b);
  tr.appendChild(td);
  return tr;
}

function jobCell(j, col) {
  switch (col) {
    case "id": {
      const td = el("td", undefined, "id");
      td.appendChild(link(j.id, jobHref(j.id)));
      if (j.cancelling) td.appendChild(el("div", "cancelling", "meta cancelling")).title = CANCELLING;
      return td;
    }
    case "created": return timeCell(j.created, col);
    case "due": return timeCell(j.due, col);
    case "ttr-ends": return timeCell(Date.now() + j.time_left * 1000, col);
    case "died": return timeCell(j.dead_at, col);
    case "completed-at": return timeCell(j.completed_at, col);
    case "cancelled-at": return timeCell(j.cancelled_at, col);
    case "errors": return errorsCell(j, col);
    case "body": return clipCell(bodyText(j.body ?? j.body_preview ?? ""), col);
    case "result": return j.result === undefined ? el("td", "–", col) : clipCell(JSON.stringify(j.result), col);
    case "progress": return j.progress === undefined ? el("td", "–", col) : clipCell(JSON.stringify(j.progress), col);
  }
  return el("td", j[col], col);
}

// ERRORS_SHOWN is how many of a dead job's errors its row shows, the
// newest; the rest are counted, and all are in its tooltip and on its page.
const ERRORS_SHOWN = 3;

// errorsCell shows a job's failures' errors in its row, newest first, each
// "attempt N: error" on a line of its own (a job that failed before the
// broker kept them shows its last error alone).
function errorsCell(j, cls) {
  const td = el("td", undefined, cls);
  const all = (j.errors || []).map(e => `attempt ${e.attempt}: ${e.error}`).reverse();
  if (all.length === 0) all.push(j.last_error || "–");
  const list = td.appendChild(el("ol", undefined, "reasons"));
  for (const line of all.slice(0, ERRORS_SHOWN)) list.appendChild(el("li", line));
  if (all.length > ERRORS_SHOWN) list.appendChild(el("li", `and ${all.length - ERRORS_SHOWN} earlier`, "more"));
  td.title = all.join("\n");
  return td;
}

// clipCell shows text cut to a few lines, the whole of it as its tooltip.
function clipCell(text, cls) {
  const td = el("td", undefined, cls);
  td.appendChild(el("div", text, "clip")).title = text;
  return td;
}

// bodyText shows a body as text: a body pushed as a JSON object or array
// comes as that JSON, shown as its compact text.
function bodyText(body) {
  return typeof body === "string" ? body : JSON.stringify(body);
}

// jobActions are the buttons for one job: kick a buried or delayed job,
// retry a dead one, push a completed or cancelled one again, delete any
// (asking first: it cannot be undone).
function jobActions(j, topic, state) {
  const path = `/jobs/${enc(j.id)}`, out = [];
  if (state === "buried" || state === "delayed") {
    out.push(actionButton("Kick", "kick", `Kick job ${j.id}? It becomes ready now.`, () => api("POST", `${path}/kick`)));
  }
  if (state === "dead") {
    out.push(actionButton("Retry", "retry", `Retry dead job ${j.id}? It becomes ready, its failures forgotten.`,
      () => api("POST", `/topics/${enc(topic)}/dead/retry`, {ids: [j.id]})));
  }
  if (state === "completed" || state === "cancelled") {
    out.push(actionButton("Push again", "again", againText(j.id, state),
      () => api("POST", `/topics/${enc(topic)}/${state}/retry`, {ids: [j.id]})));
  }
  const warn = state === "reserved" ? " Its consumer's ack will then fail." : "";
  out.push(actionButton("Delete", "danger delete", `Delete job ${j.id} of ${topic}?${warn} This cannot be undone.`,
    () => api("DELETE", path)));
  return out;
}

// againText asks before a completed or cancelled job is pushed again, from
// its row or its page.
function againText(id, state) {
  return state === "completed" ? `Push completed job ${id} again? It becomes ready, its result forgotten.`
    : `Push cancelled job ${id} again? It becomes ready, to run after all.`;
}

// ---- one job ----

// CANCELLING is what a reserved job marked cancelling waits for.
const CANCELLING = "yes: ends when its consumer next reports";

// cancelText asks before a job is cancelled, as its state says what a
// cancel does: a waiting job ends now, a reserved one when its consumer
// next touches, reports or acks it.
function cancelText(id, state) {
  return state === "reserved"
    ? `Cancel job ${id}? A consumer has it: it ends cancelled when its consumer next touches, reports on or acks it.`
    : `Cancel ${state} job ${id}? It ends cancelled now, and will not run.`;
}

// cancelNote says what a cancel did, from its answer: the job ended
// cancelled (kept, or removed where its topic keeps none), or marked
// cancelling (202: a consumer has it).
function cancelNote(id, j) {
  if (j.cancelling) return `Cancelling: job ${id} ends when its consumer next reports.`;
  if (j.cancelled_at) return `Cancelled: job ${id} will not run.`;
  return `Cancelled: job ${id} will not run. Its topic keeps no cancelled job (keep_completed 0), so it is gone.`;
}

// showNote says what the job page's last action did ("": nothing), until
// another job's page opens.
function showNote(text) {
  const note = document.getElementById("job-note");
  note.textContent = text;
  note.hidden = text === "";
}

function startJob(v) {
  setText("job-title", v.id);
  setText("job-error", "");
  showNote("");
  document.getElementById("job-found").hidden = true;
  document.title = `job ${v.id} · gmq`;
}

async function refreshJob(v, n) {
  let j;
  try {
    j = await api("GET", `/jobs/${enc(v.id)}`);
  } catch (e) {
    if (n !== shown) return;
    document.getElementById("job-found").hidden = true;
    setText("job-error", e.message);
    return;
  }
  if (n !== shown) return;
  setText("job-error", "");
  renderJob(j);
}

function renderJob(j) {
  const topicLink = document.getElementById("job-topic-link");
  topicLink.textContent = j.topic;
  topicLink.href = topicHref(j.topic, j.state);
  const fields = [["id", j.id], ["number", j.internal_id], ["topic", link(j.topic, topicHref(j.topic))],
    ["state", STATES.includes(j.state) ? link(j.state, topicHref(j.topic, j.state)) : j.state], ["priority", j.priority], ["delay", `${j.delay}s`],
    ["TTR", `${j.TTR}s`], ["attempt", j.attempt], ["reserves", j.reserves], ["timeouts", j.timeouts],
    ["releases", j.releases], ["buries", j.buries], ["kicks", j.kicks], ["failures", j.failures],
    ["last error", j.last_error || "–"], ["created", when(j.created)], ["age", duration(j.age)]];
  if (j.due) fields.push(["due", when(j.due)]);
  // Its retry policy: how many failures it may have, and when a job waiting
  // out its backoff is tried again (GET /api/v1/jobs/ID; docs/topics.md).
  if (j.max_attempts !== undefined) fields.push(["max attempts", j.max_attempts === 0 ? "no limit (retried for ever)" : j.max_attempts]);
  if (j.next_attempt_at) fields.push(["next attempt", when(j.next_attempt_at)]);
  if (j.state === "reserved") fields.push(["TTR ends", when(Date.now() + j.time_left * 1000)]);
  if (j.expires) fields.push(["expires", when(j.expires)]);
  if (j.dead_at) fields.push(["died", when(j.dead_at)]);
  if (j.completed_at) fields.push(["completed", when(j.completed_at)]);
  if (j.cancelled_at) fields.push(["cancelled", when(j.cancelled_at)]);
  if (j.cancelling) fields.push(["cancelling", CANCELLING]);
  if (j.keep_completed !== undefined) fields.push(["keep completed", `${j.keep_completed}s`]);
  if (j.batch) fields.push(["batch", link(j.batch, batchHref(j.batch))]);
  for (const [k, ids] of [["after", j.after], ["waiting for", j.waiting_for], ["then", j.then], ["on dead", j.on_dead]]) {
    if (ids && ids.length) fields.push([k, jobLinks(ids)]);
  }
  fillFields(document.getElementById("job-fields"), fields);
  document.getElementById("job-body").textContent = bodyText(j.body);
  renderResult(j);
  const found = document.getElementById("job-found");
  found.hidden = false;
  renderProgress(j); // shown: its log's and history's boxes can scroll
  renderErrors(j);
  renderHistory(j);
  found.dataset.id = j.id;
  found.dataset.topic = j.topic;
  found.dataset.state = j.state;
  document.getElementById("job-kick").hidden = !(j.state === "buried" || j.state === "delayed");
  document.getElementById("job-retry").hidden = j.state !== "dead";
  document.getElementById("job-again").hidden = j.state !== "completed" && j.state !== "cancelled";
  document.getElementById("job-cancel").hidden = !CANCELLABLE.includes(j.state) || j.cancelling === true;
}

// jobLinks is a list of jobs' ids, each a link to its page.
function jobLinks(ids) {
  const span = el("span", undefined, "ids");
  ids.forEach((id, i) => span.append(...(i ? [", "] : []), link(id, jobHref(id))));
  return span;
}

// renderResult shows a completed job's result, the JSON its ack gave,
// indented; or that it has none.
function renderResult(j) {
  document.getElementById("job-outcome").hidden = j.state !== "completed" && j.result === undefined;
  document.getElementById("job-result").hidden = j.result === undefined;
  document.getElementById("job-no-result").hidden = j.result !== undefined;
  document.getElementById("job-result").textContent = j.result === undefined ? "" : JSON.stringify(j.result, null, 2);
}

// renderProgress shows what the job's consumer reported (POST
// .../progress): its last progress, any JSON value, indented; and its log,
// each line's time and text, oldest first, in a box that scrolls.
function renderProgress(j) {
  document.getElementById("job-progress-part").hidden = j.progress === undefined;
  setText("job-progress", j.progress === undefined ? "" : JSON.stringify(j.progress, null, 2));
  const log = j.log || [];
  document.getElementById("job-log-part").hidden = log.length === 0;
  setText("job-log-count", log.length === 1 ? "1 line" : `${log.length} lines`);
  fillFollowing(document.getElementById("job-log"), j.id, log.map(l => {
    const li = el("li");
    li.append(atTime(l.at), el("span", l.line, "line"));
    return li;
  }));
}

// renderErrors shows the errors of the job's last failures (docs/topics.md,
// "Failures and retries"): each one's time, attempt and error, oldest
// first, in a box that scrolls.
function renderErrors(j) {
  const errors = j.errors || [];
  document.getElementById("job-errors-part").hidden = errors.length === 0;
  setText("job-errors-count", errors.length === 1 ? "1 failure" : `the last ${errors.length} failures`);
  fillFollowing(document.getElementById("job-errors"), j.id, errors.map(e => {
    const li = el("li");
    li.append(atTime(e.at), el("span", `attempt ${e.attempt}`, "attempt"), el("span", e.error, "reason"));
    return li;
  }));
}

// renderHistory shows the job's transitions, where its topic keeps them
// (job_history; docs/outcomes.md, "A job's history"): each one's time,
// event, attempt and detail, oldest first, in a box that scrolls.
function renderHistory(j) {
  const history = j.history || [];
  document.getElementById("job-history-part").hidden = history.length === 0;
  setText("job-history-count", history.length === 1 ? "1 entry" : `${history.length} entries`);
  fillFollowing(document.getElementById("job-history"), j.id, history.map(h => {
    const li = el("li");
    li.dataset.event = h.event;
    li.append(atTime(h.at), el("span", h.event, "event"), el("span", `attempt ${h.attempt}`, "attempt"),
      el("span", h.detail ?? "", "detail"));
    return li;
  }));
}

// atTime is a <time> showing t (RFC 3339) to the second, the full time
// (its zone too) as its tooltip.
function atTime(t) {
  const at = el("time", clock(t), "at");
  at.dateTime = t;
  at.title = new Date(t).toString();
  return at;
}

// fillFollowing puts items in a box that scrolls (a job's log, its
// history). The box starts at its end, and stays there as items come
// while it is; one scrolled up stays where it is.
function fillFollowing(box, id, items) {
  const follow = box.dataset.id !== id || box.scrollHeight - box.scrollTop - box.clientHeight < 4;
  box.replaceChildren(...items);
  box.dataset.id = id;
  if (follow) box.scrollTop = box.scrollHeight;
}

// LIMITS are the flow-control settings the topic page's form sets, by input.
const LIMITS = {"limit-rate": "rate", "limit-burst": "burst", "limit-max-reserved": "max_reserved",
  "limit-group-max-reserved": "group_max_reserved", "limit-group-rate": "group_rate"};

// showLimits fills the limits form with the topic's settings, unless it is
// being edited (typed in and not yet sent), and says what they hold now.
function showLimits(t) {
  const s = t.settings || {};
  if (!document.getElementById("limits").dataset.dirty) {
    for (const [id, key] of Object.entries(LIMITS)) document.getElementById(id).value = s[key] ? String(s[key]) : "";
  }
  setText("limit-state", flow(t));
  // A grouped topic's busiest groups (the stats carry the ten with the most ready jobs).
  const groups = document.getElementById("topic-groups");
  groups.hidden = !t.groups;
  if (t.groups) {
    const list = (t.busiest_groups || []).map(g => `${g.group || "(no group)"}: ${g.ready} ready, ${g.reserved} reserved`);
    setText("topic-groups", `${t.groups} groups with ready jobs; busiest: ${list.join(" · ")}`);
  }
}

// setLimits sends the form's limits: an empty input puts a setting back to
// conf.ini's (null), and the topic's other settings stay.
function setLimits(e) {
  e.preventDefault();
  delete e.target.dataset.dirty;
  const changes = {};
  for (const [id, key] of Object.entries(LIMITS)) {
    const v = document.getElementById(id).value.trim();
    changes[key] = v === "" ? null : Number(v);
  }
  act(`Set ${view.topic}'s limits: rate ${changes.rate ?? "none"}/s, burst ${changes.burst ?? 1}, max reserved ${changes.max_reserved ?? "none"}; ` +
    `per group: max reserved ${changes.group_max_reserved ?? "none"}, rate ${changes.group_rate ?? "none"}/s?`,
    () => api("PUT", `/topics/${enc(view.topic)}/config`, changes));
}

function wireJobPage() {
  const limits = document.getElementById("limits");
  limits.addEventListener("submit", setLimits);
  limits.addEventListener("input", () => { limits.dataset.dirty = "1"; });
  const found = document.getElementById("job-found");
  document.getElementById("job-kick").addEventListener("click", () => {
    const id = found.dataset.id;
    act(`Kick job ${id}? It becomes ready now.`, () => api("POST", `/jobs/${enc(id)}/kick`));
  });
  document.getElementById("job-retry").addEventListener("click", () => {
    const {id, topic} = found.dataset;
    act(`Retry dead job ${id}? It becomes ready, its failures forgotten.`,
      () => api("POST", `/topics/${enc(topic)}/dead/retry`, {ids: [id]}));
  });
  document.getElementById("job-again").addEventListener("click", () => {
    const {id, topic, state} = found.dataset;
    act(againText(id, state), () => api("POST", `/topics/${enc(topic)}/${state}/retry`, {ids: [id]}));
  });
  document.getElementById("job-cancel").addEventListener("click", () => {
    const {id, state} = found.dataset;
    act(cancelText(id, state), async () => showNote(cancelNote(id, await api("POST", `/jobs/${enc(id)}/cancel`))));
  });
  document.getElementById("job-delete").addEventListener("click", () => {
    const {id, topic, state} = found.dataset;
    act(`Delete job ${id} of ${topic}? This cannot be undone.`, async () => {
      await api("DELETE", `/jobs/${enc(id)}`);
      location.replace(topicHref(topic, state)); // its page is gone: back to the list it was in
    });
  });
  document.getElementById("dead-retry-all").addEventListener("click", () =>
    act(`Retry every dead job of ${view.topic}? They become ready.`, () => api("POST", `/topics/${enc(view.topic)}/dead/retry`)));
  document.getElementById("dead-delete-all").addEventListener("click", () =>
    act(`Delete every dead job of ${view.topic}? This cannot be undone.`, () => api("DELETE", `/topics/${enc(view.topic)}/dead`)));
  document.getElementById("completed-retry-all").addEventListener("click", () =>
    act(`Push every completed job of ${view.topic} again? They become ready, their results forgotten.`,
      () => api("POST", `/topics/${enc(view.topic)}/completed/retry`)));
  document.getElementById("completed-delete-all").addEventListener("click", () =>
    act(`Delete every completed job of ${view.topic}? This cannot be undone.`, () => api("DELETE", `/topics/${enc(view.topic)}/completed`)));
  document.getElementById("cancelled-retry-all").addEventListener("click", () =>
    act(`Push every cancelled job of ${view.topic} again? They become ready, to run after all.`,
      () => api("POST", `/topics/${enc(view.topic)}/cancelled/retry`)));
  document.getElementById("cancelled-delete-all").addEventListener("click", () =>
    act(`Delete every cancelled job of ${view.topic}? This cannot be undone.`, () => api("DELETE", `/topics/${enc(view.topic)}/cancelled`)));
}
