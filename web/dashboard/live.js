// A topic's live tail (#/topics/T/live): its events as they happen, the
// newest first, the last LIVE_MAX kept (GET /api/v1/events?topics=T:
// Server-Sent Events, docs/outcomes.md, "Events"). The EventSource sends
// the dashboard's session cookie as its fetches do, and the page's
// Content-Security-Policy (default-src 'self') lets it reach the broker
// that served the page. The stream is closed while the page is hidden or
// paused and when another page shows, and opened again from the last
// event seen (?last_event_id=), so that what happened meanwhile comes
// then; another topic's tail starts afresh. A stream that breaks is opened
// again the same way, by this page rather than by EventSource (whose
// reconnection would send the first stream's ?last_event_id= again,
// which the broker reads before the Last-Event-ID header it sends).
"use strict";

const LIVE_MAX = 200;
const LIVE_RETRY_MS = [1000, 15000]; // the wait before opening a broken stream again: the first, the longest

// live is the tail's state: its topic, its stream, the last event's id
// (where the next stream starts), events waiting to be drawn.
const live = {topic: null, source: null, last: "", paused: false, pending: [], drawing: false, retries: 0, timer: 0};

// onLive says whether the page shows the tail of live.topic.
const onLive = () => view.name === "topic" && view.state === "live" && view.topic === live.topic;

// showLive opens the tail's stream when the page shown is a tail, and
// closes it otherwise (navigate calls it as each page opens).
function showLive(v) {
  if (v.name !== "topic" || v.state !== "live") { closeLive(); return; }
  if (live.topic !== v.topic) {
    closeLive();
    Object.assign(live, {topic: v.topic, last: "", paused: false, pending: [], retries: 0});
    document.querySelector("#live-list tbody").replaceChildren(); // another topic's
    drawLive();
  }
  openLive();
}

// openLive opens the tail's stream, from the last event seen, unless it
// is open, paused, hidden or not shown.
function openLive() {
  clearTimeout(live.timer);
  if (live.source || live.paused || document.hidden || !onLive()) { liveState(); return; }
  const q = new URLSearchParams({topics: live.topic});
  if (live.last) q.set("last_event_id", live.last);
  const url = "/api/v1/events?" + q;
  const es = new EventSource(url);
  live.source = es;
  liveState("connecting…");
  es.addEventListener("ready", e => { seen(e); live.retries = 0; liveState(`live since ${timeOfDay(new Date())}`, "ok"); });
  es.addEventListener("message", e => { seen(e); queueLive(JSON.parse(e.data)); });
  es.addEventListener("lost", e => {
    seen(e);
    queueLive({notice: "lost", at: new Date(), text: `Events were missed: ${JSON.parse(e.data).error}.`});
  });
  es.addEventListener("lagging", e => {
    live.retries = -1; // the broker ends the stream: open it again at once
    queueLive({notice: "lagging", at: new Date(), text: `This page fell behind: ${JSON.parse(e.data).error}. It goes on from the last event.`});
  });
  es.addEventListener("error", () => broken(es, url));
}

// seen keeps an event's id: where the next stream starts.
function seen(e) { if (e.lastEventId) live.last = e.lastEventId; }

// closeLive closes the tail's stream; its events stay shown.
function closeLive() {
  clearTimeout(live.timer);
  if (live.source) live.source.close();
  live.source = null;
  liveState();
}

// broken closes a stream that broke, says why and opens it again after a
// wait that grows to LIVE_RETRY_MS[1]. A stream refused (EventSource gives
// up on an answer that is no stream) is asked again with fetch for the
// broker's reason; a 401 (the session ended) shows the login form.
async function broken(es, url) {
  if (es !== live.source) return;
  const refused = es.readyState === EventSource.CLOSED;
  es.close();
  live.source = null;
  const wait = live.retries < 0 ? 0 : Math.min(LIVE_RETRY_MS[0] * 2 ** live.retries, LIVE_RETRY_MS[1]);
  live.retries = Math.max(0, live.retries) + 1;
  const why = refused ? await refusal(url) : "the stream broke";
  if (live.source || !onLive()) return; // opened again, or left, meanwhile
  liveState(`${why}: opening it again in ${wait / 1000} s`, "bad");
  live.timer = setTimeout(openLive, wait);
}

// refusal is the broker's reason for refusing a stream.
async function refusal(url) {
  const ctl = new AbortController();
  try {
    const resp = await fetch(url, {credentials: "same-origin", signal: ctl.signal});
    if (resp.status === 401) { location.href = "/dashboard/login" + location.hash; return "sign in"; }
    if (resp.ok) return "the stream broke";
    const data = await resp.json().catch(() => null);
    return `the broker refused the stream: ${data && data.error ? data.error : `${resp.status} ${resp.statusText}`}`;
  } catch (e) {
    return `the broker cannot be reached (${e.message})`;
  } finally {
    ctl.abort(); // a stream that answered now is not this page's: the next one is
  }
}

// liveState says how the tail is: text and cls ("ok", "bad") when given,
// else why it is closed (paused, hidden).
function liveState(text, cls) {
  const state = document.getElementById("live-state");
  if (text === undefined) {
    if (live.source) return;
    text = live.paused ? "paused: Resume goes on from the last event" : document.hidden ? "paused while the page is hidden" : "closed";
  }
  state.textContent = text;
  state.className = `live-state ${cls || ""}`;
  setText("live-pause", live.paused ? "Resume" : "Pause");
}

// queueLive keeps an event (or a notice: {notice, at, text}) to draw at
// the next frame: a burst (a stream that resumes) is drawn at once, and
// only its last LIVE_MAX.
function queueLive(item) {
  live.pending.push(item);
  if (live.pending.length > LIVE_MAX) live.pending.shift();
  if (!live.drawing) {
    live.drawing = true;
    requestAnimationFrame(drawLive);
  }
}

// drawLive draws the events waiting, the newest first, above those shown,
// and keeps the last LIVE_MAX rows.
function drawLive() {
  live.drawing = false;
  const body = document.querySelector("#live-list tbody");
  body.prepend(...live.pending.splice(0).reverse().map(x => x.notice ? noticeRow(x) : eventRow(x)));
  while (body.rows.length > LIVE_MAX) body.lastElementChild.remove();
  document.getElementById("live-empty").hidden = body.rows.length > 0;
}

// eventRow is an event's row: when, its type, its job (a link to its
// page), attempt, and what it carries.
function eventRow(ev) {
  const tr = el("tr");
  tr.dataset.type = ev.type;
  const at = el("td", timeOfDay(ev.at), "at");
  at.title = new Date(ev.at).toString();
  const job = el("td", undefined, "id");
  job.appendChild(link(ev.id, jobHref(ev.id)));
  tr.append(at, el("td", ev.type, "type"), job, el("td", ev.attempt, "n attempt"), clipCell(carried(ev), "carried"));
  return tr;
}

// noticeRow is a notice's row: lost (events were missed) or lagging (the
// broker ended the stream).
function noticeRow(n) {
  const tr = el("tr", undefined, "notice");
  tr.dataset.notice = n.notice;
  const text = el("td", n.text, "said");
  text.colSpan = 4;
  tr.append(el("td", timeOfDay(n.at), "at"), text);
  return tr;
}

// carried is what an event carries, as text: a completed job's result or a
// progress as compact JSON, a failure's error, another detail (DETAIL); a
// value cut at 1 KiB says so ("" when none).
function carried(ev) {
  for (const k of ["result", "error", "progress", "detail"]) {
    if (ev[k] === undefined) continue;
    let text = typeof ev[k] === "string" && (ev.cut || k === "error" || k === "detail") ? ev[k] : JSON.stringify(ev[k]);
    if (k === "detail" && DETAIL[ev.type]) text = DETAIL[ev.type] + text;
    return ev.cut ? `${text}… (cut at 1 KiB: the job's page has it whole)` : text;
  }
  return "";
}

// DETAIL says what an event's detail is, by type: the broker that handed a
// job out, the topic an expired job went to.
const DETAIL = {reserved: "by ", expired: "to "};

// timeOfDay is a time as "10:12:05.123", in the browser's time zone.
function timeOfDay(t) {
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? "–" : `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${String(d.getMilliseconds()).padStart(3, "0")}`;
}

// refreshLive reads the topic (refreshTopic's part for the tail): its
// counts in the tabs, its limits, and whether it streams at all (its
// settings: a topic with no job yet has no counts, only settings).
async function refreshLive(v, n) {
  const path = `/topics/${enc(v.topic)}`;
  let t;
  try {
    t = await api("GET", path).catch(() => null) || await api("GET", `${path}/config`);
  } catch (e) {
    if (n === shown) setText("topic-error", e.message);
    return;
  }
  if (n !== shown) return;
  setText("topic-error", "");
  setText("topic-count", "events as they happen");
  showCounts(t.name === undefined ? null : t);
  const off = !(t.settings || {}).events;
  document.getElementById("live-off").hidden = !off;
  if (off) {
    setText("live-off-text", `This topic streams nothing: set events = true (PUT /api/v1/topics/${v.topic}/config {"events": true}, ` +
      `or events = true in conf.ini's [topic.${v.topic}]; docs/outcomes.md, "Events").`);
  }
}

function wireLive() {
  document.getElementById("live-pause").addEventListener("click", () => {
    live.paused = !live.paused;
    if (live.paused) closeLive(); else openLive();
  });
  document.getElementById("live-clear").addEventListener("click", () => {
    live.pending = [];
    document.querySelector("#live-list tbody").replaceChildren();
    drawLive();
  });
  document.getElementById("live-events-on").addEventListener("click", () =>
    act(`Turn events on for ${view.topic}? Each transition of its jobs then goes to its bucket's events stream, for this tail and ` +
      "every consumer of GET /api/v1/events.", () => api("PUT", `/topics/${enc(view.topic)}/config`, {events: true})));
  document.addEventListener("visibilitychange", () => { if (document.hidden) closeLive(); else openLive(); });
}
