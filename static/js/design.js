// The design page: floor plan colored by design metrics (fetched, cacheable), rack panel on
// click, and the scenarios/runs panel kept current by the design's live stream.

import { FloorPlan, bindMetricSelect, planFromJson } from "./floorplan.js";
import { rackPanelOpener } from "./elevation.js";
import { LiveSocket } from "./live.js";

const root = document.getElementById("floor-plan");
const runsPanel = document.getElementById("design-runs");

async function loadFloorPlan() {
  const response = await fetch(root.dataset.src, { headers: { Accept: "application/json" } });
  const plan = planFromJson(await response.json());
  const floor = new FloorPlan(root, plan, {
    metric: new URLSearchParams(window.location.search).get("metric") || "rack_power",
    onRackClick: rackPanelOpener(document.getElementById("rack-panel"), root.dataset.rackUrl),
  });
  bindMetricSelect(floor, document.querySelector("[data-metric-select]"));
  window.twinFloorPlan = floor;
  return floor;
}

let refreshTimer = 0;
let panelQuery = ""; // the page of scenarios/runs the user paged to, kept by live refreshes
async function refreshRuns() {
  const response = await fetch(runsPanel.dataset.src + panelQuery, { headers: { Accept: "text/html" } });
  if (response.ok) runsPanel.innerHTML = await response.text();
  runsPanel.dataset.loaded = panelQuery || "?";
}

// The panel's pager links page the fragment in place instead of leaving the design page.
runsPanel.addEventListener("click", (event) => {
  const link = event.target.closest("a[data-panel-page]");
  if (!link) return;
  event.preventDefault();
  panelQuery = new URL(link.href).search;
  refreshRuns();
});

loadFloorPlan();
refreshRuns();
const live = new LiveSocket(root.dataset.liveUrl, {
  // A run of this design changed status: reload the panel (debounced; messages can burst).
  status() {
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(refreshRuns, 250);
  },
});
live.connect();
window.twinLive = live;
