// The batches' pages (docs/workflows.md, Batches): #/batches lists the
// batches kept, newest first, 50 a page (?page=N); #/batches/ID shows one:
// its counts, callbacks, meta and dead jobs. An open batch can be closed
// and one not done cancelled, each asked first.
"use strict";

const BATCH_PAGE = 50;
const BATCH_DEPTH = 5000; // the newest batches the API lists (pool.MaxBatchesListed); older ones by id
const batchHref = id => `#/batches/${enc(id)}`;

async function refreshBatches(v, n) {
  const data = await api("GET", `/batches?offset=${(v.page - 1) * BATCH_PAGE}&limit=${BATCH_PAGE}`);
  if (n !== shown) return;
  const listed = Math.min(data.total, BATCH_DEPTH);
  const pages = Math.max(1, Math.ceil(listed / BATCH_PAGE));
  if (v.page > pages) { location.replace(pages > 1 ? `#/batches?page=${pages}` : "#/batches"); return; }
  setText("batches-count", data.total === 1 ? "1 kept" : `${data.total} kept` + (data.total > BATCH_DEPTH ? `, the newest ${BATCH_DEPTH} listed` : ""));
  document.getElementById("batches-empty").hidden = data.batches.length > 0;
  replaceRows(document.querySelector("#batch-list tbody"), data.batches.map(batchRow));
  renderPager(document.getElementById("batches-pager"), listed, v.page, BATCH_PAGE, p => p > 1 ? `#/batches?page=${p}` : "#/batches");
}

// batchRow is a batch's row: its id (a link to its page), state, times,
// counts, meta and actions.
function batchRow(b) {
  const tr = el("tr");
  tr.dataset.id = b.id;
  const id = el("td", undefined, "id");
  id.append(link(b.id, batchHref(b.id)));
  tr.append(id, el("td", b.state, `state ${b.state}`), timeCell(b.created_at, "created"), timeCell(b.finished_at, "finished"));
  for (const k of ["total", "pending", "completed", "dead", "removed"]) tr.append(el("td", b[k], `num ${k}`));
  const meta = b.meta === undefined ? "–" : JSON.stringify(b.meta);
  const td = el("td", meta.length > 80 ? meta.slice(0, 79) + "…" : meta, "meta");
  td.title = meta;
  tr.append(td);
  const actions = el("td", undefined, "actions");
  actions.append(...batchActions(b));
  tr.append(actions);
  return tr;
}

// batchActions are the buttons a batch's state allows: close an open one,
// cancel one not finished.
function batchActions(b) {
  const out = [];
  if (b.state === "open") out.push(actionButton("Close", "close", closeText(b), () => api("POST", `/batches/${enc(b.id)}/close`)));
  if (b.state === "open" || b.state === "closed") {
    out.push(actionButton("Cancel", "cancel danger", cancelBatchText(b), () => api("DELETE", `/batches/${enc(b.id)}`)));
  }
  return out;
}

const closeText = b => `Close batch ${b.id}? It is done once its ${b.pending} pending jobs have ended.`;
const cancelBatchText = b =>
  `Cancel batch ${b.id}? Its ${b.pending} jobs that have not ended are cancelled, and none of its callbacks is pushed.`;

async function refreshBatch(v, n) {
  setText("batch-title", v.id);
  let b;
  try {
    b = await api("GET", `/batches/${enc(v.id)}`);
  } catch (e) {
    if (n !== shown) return;
    document.getElementById("batch-found").hidden = true;
    setText("batch-error", e.message);
    return;
  }
  if (n !== shown) return;
  setText("batch-error", "");
  renderBatch(b);
}

function renderBatch(b) {
  const fields = [["id", b.id], ["state", b.state], ["created", when(b.created_at)], ["finished", b.finished_at ? when(b.finished_at) : "–"],
    ["jobs", b.total], ["pending", b.pending], ["completed", b.completed], ["dead", b.dead], ["removed", b.removed],
    ["results", b.with_results ? "kept for the summary" : "not kept"]];
  for (const kind of ["on_complete", "on_success", "on_death"]) {
    const id = (b.callbacks || {})[kind];
    if (id) fields.push([kind.replace("_", " "), link(id, jobHref(id))]);
  }
  fillFields(document.getElementById("batch-fields"), fields);
  document.getElementById("batch-meta-part").hidden = b.meta === undefined;
  setText("batch-meta", b.meta === undefined ? "" : JSON.stringify(b.meta, null, 2));
  const dead = Object.entries(b.dead_jobs || {});
  document.getElementById("batch-dead-part").hidden = dead.length === 0;
  setText("batch-dead-count", dead.length < b.dead ? `the first ${dead.length} of ${b.dead}` : "");
  replaceRows(document.querySelector("#batch-dead tbody"), dead.map(([id, error]) => {
    const tr = el("tr");
    tr.dataset.id = id;
    const td = el("td", undefined, "id");
    td.append(link(id, jobHref(id)));
    tr.append(td, el("td", error, "error"));
    return tr;
  }));
  const found = document.getElementById("batch-found");
  found.hidden = false;
  found.dataset.id = b.id;
  found.dataset.pending = b.pending;
  document.getElementById("batch-close").hidden = b.state !== "open";
  document.getElementById("batch-cancel").hidden = b.state !== "open" && b.state !== "closed";
}

function wireBatchPage() {
  const found = document.getElementById("batch-found");
  const shownBatch = () => ({id: found.dataset.id, pending: found.dataset.pending});
  document.getElementById("batch-close").addEventListener("click", () => {
    const b = shownBatch();
    act(closeText(b), () => api("POST", `/batches/${enc(b.id)}/close`));
  });
  document.getElementById("batch-cancel").addEventListener("click", () => {
    const b = shownBatch();
    act(cancelBatchText(b), () => api("DELETE", `/batches/${enc(b.id)}`));
  });
}
