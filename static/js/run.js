// The run page: progress bar, status and summary from the run's live stream; the floor plan
// recolored in place by "partial" messages; result charts drawn when the run succeeds.

import { FloorPlan, bindMetricSelect, planFromJson } from "./floorplan.js";
import { rackPanelOpener } from "./elevation.js";
import { LiveSocket, isTerminal } from "./live.js";
import { fetchCharts } from "./charts.js";
import { renderSummary } from "./summary.js";

const page = document.getElementById("run-page");
const $ = (selector) => page.querySelector(selector);
const initial = JSON.parse(document.getElementById("run-state").textContent);
const planJson = JSON.parse(document.getElementById("floor-plan-data").textContent);
const root = document.getElementById("floor-plan");

const floor = new FloorPlan(root, planFromJson(planJson, initial.rack_values || {}), {
  metric: page.dataset.metric || "link_util",
  onRackClick: rackPanelOpener(document.getElementById("rack-panel"), root.dataset.rackUrl),
});
bindMetricSelect(floor, document.querySelector("[data-metric-select]"));

let chartsLoaded = false;
let status = initial.status;

function setProgress(fraction, stage) {
  const pct = Math.max(0, Math.min(100, fraction * 100));
  const bar = $(".progress");
  bar.firstElementChild.style.width = `${pct}%`;
  bar.setAttribute("aria-valuenow", pct.toFixed(0));
  $("[data-progress-text]").textContent = `${pct.toFixed(0)} %`;
  if (stage !== undefined) $("[data-stage]").textContent = stage;
}

function setStatus(next, label, error) {
  status = next;
  const badge = $("[data-status]");
  badge.className = `status ${next}`;
  badge.textContent = label || next;
  $(".progress").dataset.status = next;
  page.dataset.status = next;
  const box = $("[data-error]");
  box.textContent = error || "";
  box.hidden = !error;
  const cancel = $("[data-cancel-form]");
  if (cancel) cancel.hidden = isTerminal(next);
  if (next === "succeeded" && !chartsLoaded) {
    chartsLoaded = true;
    fetchCharts(document.getElementById("charts"), page.dataset.chartsUrl);
  }
}

/** A finished point of a scaling sweep, streamed as a partial message: upsert its table row. */
function showPoint(point) {
  page.querySelector("[data-points-panel]").hidden = false;
  const body = $("[data-points]");
  let row = body.querySelector(`tr[data-index="${point.index}"]`);
  if (!row) {
    row = document.createElement("tr");
    row.dataset.index = point.index;
    const after = [...body.children].find((r) => Number(r.dataset.index) > point.index);
    body.insertBefore(row, after || null);
  }
  const cells = point.error
    ? [point.gpus?.toLocaleString("en-US"), point.error, "", ""]
    : [point.gpus.toLocaleString("en-US"), `${point.step_time_s.toFixed(3)} s`,
       Math.round(point.tokens_per_s).toLocaleString("en-US"), `${(point.mfu * 100).toFixed(1)} %`];
  row.replaceChildren(...cells.map((text) => Object.assign(document.createElement("td"), { className: "num", textContent: text ?? "" })));
}

function applyState(run) {
  setProgress(run.progress, run.stage);
  setStatus(run.status, run.status_label, run.error);
  renderSummary($("[data-summary]"), run.kind, run.summary);
  $("[data-not-aligned]").hidden = run.summary?.racks_aligned !== false;
  if (Array.isArray(run.summary?.points)) run.summary.points.forEach(showPoint);
  for (const [name, values] of Object.entries(run.rack_values || {})) floor.setValues(name, values);
}

applyState(initial);

const socketState = $("[data-socket]");
const live = new LiveSocket(`/ws/runs/${initial.id}/`, {
  open: () => { socketState.textContent = "live"; },
  close: (info) => { socketState.textContent = info.willRetry ? "reconnecting…" : (isTerminal(status) ? "" : "offline"); },
  state: (msg) => applyState(msg.run),
  progress: (msg) => setProgress(msg.progress, msg.stage),
  partial: (msg) => {
    if (msg.values) floor.setValues(msg.metric, msg.values);
    if (msg.summary?.point) showPoint(msg.summary.point);
    else if (msg.summary) renderSummary($("[data-summary]"), initial.kind, msg.summary, { merge: true });
  },
  status: (msg) => {
    if (msg.status === "succeeded") setProgress(1);
    setStatus(msg.status, msg.status_label, msg.error);
    if (msg.summary) renderSummary($("[data-summary]"), initial.kind, msg.summary);
    if (Array.isArray(msg.summary?.points)) msg.summary.points.forEach(showPoint);
  },
}, { stopWhen: (msg) => (msg.type === "status" || msg.type === "state") && isTerminal(msg.status ?? msg.run?.status) });
if (!isTerminal(initial.status)) live.connect();
else if (initial.status === "succeeded") setStatus("succeeded", initial.status_label, "");

// Cancel without leaving the page; the status message confirms it.
$("[data-cancel-form]")?.addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.currentTarget;
  form.querySelector("button").disabled = true;
  await fetch(form.action, { method: "POST", body: new FormData(form), headers: { "X-Requested-With": "fetch" } });
});

window.twinFloorPlan = floor;
window.twinLive = live;
