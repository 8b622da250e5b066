// The dashboard's parts that know nothing of gmq's API: elements, numbers,
// times, charts and pagers. Every value is written with textContent, never
// as HTML, so a job body holding markup shows as text.
"use strict";

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function link(text, href, cls) {
  const a = el("a", text, cls);
  a.href = href;
  return a;
}

function setText(id, v) { document.getElementById(id).textContent = String(v); }

// setValue writes a card's value, and the same as its tooltip: a value too
// long for its card ends in an ellipsis, the whole of it a hover away.
function setValue(id, v) {
  const e = document.getElementById(id);
  e.textContent = String(v);
  e.title = String(v);
}

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

const pad = n => String(n).padStart(2, "0");

// dateTime is a time as "2026-12-01 10:12", in the browser's time zone.
function dateTime(d) {
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

// clock is a time to the second, as "2026-12-01 10:12:05", in the
// browser's time zone ("–" when t is no time). t is an RFC 3339 string.
function clock(t) {
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? "–" : `${dateTime(d)}:${pad(d.getSeconds())}`;
}

// relative says how far a time is from now: "in 7 d", "3 min ago", "now".
// Each unit is used up to where the next reads better (90 s, not 1.5 min).
function relative(d) {
  const ms = d - Date.now(), s = Math.abs(ms) / 1000;
  let text;
  if (s < 0.5) return "now";
  if (s < 89.5) text = `${Math.round(s)} s`;
  else if (s < 89.5 * 60) text = `${Math.round(s / 60)} min`;
  else if (s < 47.5 * 3600) text = `${Math.round(s / 3600)} h`;
  else text = `${Math.round(s / 86400)} d`;
  return ms > 0 ? `in ${text}` : `${text} ago`;
}

// when is a time with its date and how far it is from now:
// "2026-12-01 10:12 (in 7 d)". t is an RFC 3339 string, a Date or ms.
function when(t) {
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? "–" : `${dateTime(d)} (${relative(d)})`;
}

// timeCell is a table cell showing when(t), the full time (seconds and
// time zone) as its tooltip; "–" when there is no time.
function timeCell(t, cls) {
  if (!t) return el("td", "–", cls);
  const td = el("td", when(t), cls);
  td.title = new Date(t).toString();
  return td;
}

const SVG = "http://www.w3.org/2000/svg";

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

function polyline(svg, points, cls) {
  const line = document.createElementNS(SVG, "polyline");
  line.setAttribute("points", points.join(" "));
  line.setAttribute("class", cls);
  svg.appendChild(line);
}

// xAt places time t on an SVG w wide that shows windowMs up to now.
const xAt = (t, now, w, windowMs) => Math.max(0, w - (now - t) / windowMs * w).toFixed(1);

// drawLines draws the rates of keys (push, pop, fail) into an SVG, scaled
// to its viewBox w by h: now at the right edge, windowMs wide. It returns
// the rate at the top of the SVG.
function drawLines(svg, samples, w, h, windowMs, keys) {
  svg.replaceChildren();
  const r = rates(samples);
  const top = Math.max(1, ...r.map(x => Math.max(...keys.map(k => x[k]))));
  const now = Date.now();
  for (const key of keys) {
    polyline(svg, r.map(x => `${xAt(x.t, now, w, windowMs)},${(h - (x[key] / top) * (h - 4) - 2).toFixed(1)}`), key);
  }
  return top;
}

// drawGauge draws one count over time (jobs ready, say) into an SVG w by h,
// scaled to its largest value: now at the right edge, windowMs wide.
function drawGauge(svg, samples, key, w, h, windowMs) {
  svg.replaceChildren();
  const now = Date.now();
  const shown = samples.filter(s => s[key] !== undefined && s.t >= now - windowMs);
  const top = Math.max(1, ...shown.map(s => s[key]));
  polyline(svg, shown.map(s => `${xAt(s.t, now, w, windowMs)},${(h - s[key] / top * (h - 3) - 1.5).toFixed(1)}`), "gauge");
  svg.dataset.points = String(shown.length);
}

function sparkSVG(w, h, label) {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", `0 0 ${w} ${h}`);
  svg.setAttribute("preserveAspectRatio", "none");
  svg.setAttribute("class", "spark");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", label);
  return svg;
}

// renderPager fills nav with first, previous, where we are, next and last,
// as links (href(page) makes each page's URL, so the back button and a
// reload keep the page). One page of results needs no pager.
function renderPager(nav, total, page, size, href) {
  const pages = Math.max(1, Math.ceil(total / size));
  const step = (text, cls, p, on) => on ? link(text, href(p), cls) : el("span", text, cls + " off");
  const from = Math.min((page - 1) * size + 1, total), to = Math.min(page * size, total);
  keepSame(nav, [step("« first", "first", 1, page > 1), step("‹ previous", "prev", page - 1, page > 1),
    el("span", `${from}–${to} of ${total} · page ${page} of ${pages}`, "range"),
    step("next ›", "next", page + 1, page < pages), step("last »", "last", pages, page < pages)]);
  nav.hidden = pages === 1 && page === 1;
}

// replaceRows swaps a table body's rows for rows, keeping each row that
// stays (same key) and each of its cells that did not change: a poll
// re-renders every 2 s, and a button replaced between its press and its
// release takes no click (a dashboard test lost one so). The keyboard's
// focus stays on the same button of the same row when that was replaced.
function replaceRows(tbody, rows) {
  const key = (tr, i) => tr && (tr.dataset.id ?? tr.dataset.topic ?? `#${i}`);
  const a = document.activeElement;
  const was = a && a !== document.body && tbody.contains(a) ? {row: key(a.closest("tr")), cls: a.className, tag: a.tagName} : null;
  const old = new Map([...tbody.children].map((tr, i) => [key(tr, i), tr]));
  setChildren(tbody, rows.map((tr, i) => {
    const o = old.get(key(tr, i));
    if (!o || !o.cloneNode(false).isEqualNode(tr.cloneNode(false))) return tr;
    keepSame(o, [...tr.childNodes]);
    return o;
  }));
  if (!was || tbody.contains(document.activeElement)) return;
  const tr = [...tbody.children].find(r => key(r) === was.row);
  const same = tr && [...tr.querySelectorAll(was.tag)].find(x => x.className === was.cls);
  if (same) same.focus({preventScroll: true});
}

// keepSame makes fresh (new nodes) the children of parent, keeping each
// old child that equals (isEqualNode) the fresh one in its place.
function keepSame(parent, fresh) {
  const old = parent.childNodes;
  setChildren(parent, fresh.map((f, i) => old[i] && old[i].isEqualNode(f) ? old[i] : f));
}

// setChildren makes next the children of parent, touching the DOM only
// where they differ from those it has: a child it keeps in its place is
// never taken out and put back (replaceChildren did so whenever a sibling
// changed, and a press and release across that make no click).
function setChildren(parent, next) {
  const keep = new Set(next);
  for (const n of [...parent.childNodes]) if (!keep.has(n)) n.remove();
  next.forEach((n, i) => {
    const at = parent.childNodes[i];
    if (at !== n) parent.insertBefore(n, at || null);
  });
}

// fillFields writes a page's fields into a <dl>: each [name, value], the
// value text or an element (a link); each <dd> is classed f-NAME (spaces
// as dashes) for the tests and the styles. A field that did not change
// keeps its nodes, as a table's rows do (replaceRows): its link stays
// clickable across the page's refreshes.
function fillFields(dl, fields) {
  keepSame(dl, fields.flatMap(([k, v]) => {
    const dd = el("dd", undefined, `f-${k.replaceAll(" ", "-")}`);
    if (v instanceof Node) dd.appendChild(v); else dd.textContent = String(v);
    return [el("dt", k), dd];
  }));
}
