// The run page: progress bar, status and figures from the run's live stream; the floor plan
// recolored in place by "partial" messages; result charts drawn when the run succeeds. What a
// kind draws beyond that lives in its own module (data-kind-script), loaded here.

import { FloorPlan, bindMetricSelect, planFromJson } from "./floorplan.js";
import { rackPanelOpener } from "./elevation.js";
import { LiveSocket, isTerminal } from "./live.js";
import { fetchCharts } from "./charts.js";
import { renderFigures } from "./summary.js";

const page = document.getElementById("run-page");
const $ = (selector) => page.querySelector(selector);
// Every URL the page and its kind module use, rendered by the template ({% url %}).
const urls = {
  charts: page.dataset.chartsUrl,
  kindData: page.dataset.kindDataUrl,
  live: page.dataset.liveUrl,
  /** A stored result array's URL (the template renders it for the name "array-name"). */
  array: (name) => page.dataset.arrayUrl.replace("/array-name/", `/${encodeURIComponent(name)}/`),
};
const initial = JSON.parse(document.getElementById("run-state").textContent);
const planJson = JSON.parse(document.getElementById("floor-plan-data").textContent);
const root = document.getElementById("floor-plan");

const openRack = rackPanelOpener(document.getElementById("rack-panel"), root.dataset.rackUrl);
const floor = new FloorPlan(root, planFromJson(planJson, initial.rack_values || {}), {
  metric: page.dataset.metric || "link_util",
  // A what-if's own hall exists only in the run: its racks have no page to open.
  onRackClick: (rack, index) => (rack.id == null ? undefined : openRack(rack, index)),
});
bindMetricSelect(floor, document.querySelector("[data-metric-select]"));

const kindModule = page.dataset.kindScript ? await import(page.dataset.kindScript) : null;
const kind = kindModule ? kindModule.init(page, { floor, run: initial, urls }) : {};

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

// RunStatus's labels, the same the template renders with get_status_display.
const STATUS_LABELS = JSON.parse(document.getElementById("status-labels").textContent);

function setStatus(next, label, error) {
  status = next;
  const badge = $("[data-status]");
  badge.className = `status ${next}`;
  badge.textContent = STATUS_LABELS[next] || label || next;
  if (next === "cancelled" || next === "failed" || next === "infeasible") $("[data-stage]").textContent = next;
  $(".progress").dataset.status = next;
  page.dataset.status = next;
  const box = $("[data-error]");
  box.textContent = error || "";
  box.hidden = !error;
  const cancel = $("[data-cancel-form]");
  if (cancel) cancel.hidden = isTerminal(next);
  // An infeasible run stores no racks' figures: show the first metric that has values (the
  // design's), not an empty grey hall.
  if (next === "infeasible" && !floor.current?.values) {
    const shown = [...floor.metrics.values()].find((metric) => metric.values);
    if (shown) floor.setMetric(shown.name);
  }
  if ((next === "succeeded" || next === "infeasible") && !chartsLoaded) {
    chartsLoaded = true;
    fetchCharts(document.getElementById("charts"), urls.charts);
  }
}

// The partial result so far (best layout, trials, points) while the run computes; the final
// figures replace it.
function setPartial(figures) {
  const shown = Array.isArray(figures) && figures.length > 0 && !isTerminal(status);
  $("[data-partial-panel]").hidden = !shown;
  if (shown) renderFigures($("[data-partial]"), figures);
}

// What the result itself says of its limits (e.g. the failures closed form outside its regime).
function setWarnings(warnings) {
  const list = $("[data-warnings]");
  const shown = Array.isArray(warnings) ? warnings : [];
  list.replaceChildren(...shown.map((text) => Object.assign(document.createElement("li"), { textContent: text })));
  list.hidden = shown.length === 0;
}

function applyState(run) {
  setProgress(run.progress, run.stage);
  setStatus(run.status, run.status_label, run.error);
  renderFigures($("[data-summary]"), run.figures);
  setWarnings(run.summary?.warnings);
  setPartial(run.partial_figures);
  for (const [name, values] of Object.entries(run.rack_values || {})) floor.setValues(name, values);
  kind.state?.(run);
}

applyState(initial);

const socketState = $("[data-socket]");
const live = new LiveSocket(urls.live, {
  open: () => { socketState.textContent = "live"; },
  close: (info) => { socketState.textContent = info.willRetry ? "reconnecting…" : (isTerminal(status) ? "" : "offline"); },
  state: (msg) => applyState(msg.run),
  // A worker's last progress can arrive after the cancel: a final status keeps its stage.
  progress: (msg) => {
    if (isTerminal(status)) return;
    if (status === "queued") setStatus("running"); // the worker started: progress says so first
    setProgress(msg.progress, msg.stage);
  },
  partial: (msg) => {
    if (msg.values) floor.setValues(msg.metric, msg.values);
    if (msg.figures) setPartial(msg.figures);
    kind.partial?.(msg);
  },
  status: (msg) => {
    // not the last step's stage
    if (msg.status === "succeeded" || msg.status === "infeasible") setProgress(1, msg.stage || "done");
    else if (msg.stage !== undefined) $("[data-stage]").textContent = msg.stage;
    setStatus(msg.status, msg.status_label, msg.error);
    renderFigures($("[data-summary]"), msg.figures);
    setWarnings(msg.summary?.warnings);
    setPartial(null);
    kind.status?.(msg);
  },
}, { stopWhen: (msg) => (msg.type === "status" || msg.type === "state") && isTerminal(msg.status ?? msg.run?.status) });
if (!isTerminal(initial.status)) live.connect();
else if (initial.status === "succeeded" || initial.status === "infeasible") setStatus(initial.status, initial.status_label, "");

// Cancel without leaving the page; the status message confirms it.
$("[data-cancel-form]")?.addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.currentTarget;
  form.querySelector("button").disabled = true;
  await fetch(form.action, { method: "POST", body: new FormData(form), headers: { "X-Requested-With": "fetch" } });
});

window.twinFloorPlan = floor;
window.twinLive = live;
