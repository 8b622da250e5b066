// The schedules page (#/schedules): every cron schedule with its next and
// last fire, and its actions: pause or resume, fire now, each asked first.
"use strict";

async function refreshSchedules(v, n) {
  const data = await api("GET", "/schedules");
  if (n !== shown) return;
  const body = document.querySelector("#schedule-list tbody");
  const list = data.schedules || [];
  document.getElementById("schedules-empty").hidden = list.length > 0;
  body.replaceChildren(...list.map(scheduleRow));
}

// scheduleRow is one schedule's row: what it is, when it fires, what its
// fires did, and its actions.
function scheduleRow(s) {
  const tr = el("tr");
  tr.dataset.schedule = s.name;
  tr.append(el("td", s.name), el("td", `${s.cron} (${s.tz})`));
  const topic = el("td");
  topic.append(link(s.job.topic, topicHref(s.job.topic)));
  tr.append(topic);
  tr.append(s.paused ? el("td", "paused", "next muted") : timeCell(s.next, "next"), timeCell(s.last, "last"));
  tr.append(el("td", s.fires, "num fires"), el("td", s.skips, "num skips"), el("td", s.refused, "num refused"));
  const actions = el("td");
  const change = s.paused ? "Resume" : "Pause";
  actions.append(
    actionButton(change, "pause", `${change} schedule ${s.name}?`,
      () => api("PUT", `/schedules/${enc(s.name)}`, {paused: !s.paused})),
    actionButton("Fire now", "fire", `Push ${s.name}'s job to ${s.job.topic} now (its next fire stays)?`,
      () => api("POST", `/schedules/${enc(s.name)}/fire`, {})));
  tr.append(actions);
  return tr;
}
