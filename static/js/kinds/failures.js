// The failure run's part of the run page: the representative trial replayed on the floor plan
// with a time slider (a rack flashes while it is down), and its event list.

import { whenSucceeded } from "../kind_data.js";
import { bindReplay } from "../replay.js";

const DAY_S = 86400;
const FLASH = "failure_replay";
const STEPS = 1000; // slider positions over the horizon

export function init(page, { floor, urls }) {
  const panel = page.querySelector("[data-failures-panel]");
  const body = panel.querySelector("[data-events]");

  /** Per-rack values at time `t` (1 down, 0.35 hit before, 0 untouched); says spares and downs. */
  function racksAt(events, horizon, t) {
    const values = new Float64Array(floor.racks.length).fill(0);
    let spares = null;
    let down = 0;
    for (const e of events) {
      if (e.time_s > t) break;
      spares = e.spares_left;
      const active = t < e.time_s + Math.max(e.downtime_s || 0, e.degraded_s || 0, horizon / 400);
      if (active) {
        down += 1;
        if (e.rack >= 0 && e.rack < values.length) values[e.rack] = 1;
      } else if (e.rack >= 0 && e.rack < values.length && values[e.rack] < 1) {
        values[e.rack] = 0.35; // failed before: a mark that fades only at the end of the replay
      }
    }
    panel.querySelector("[data-replay-spares]").textContent = spares === null ? "spares: all" : `spares left: ${spares}`;
    panel.querySelector("[data-replay-down]").textContent = down ? `${down} component(s) down or degraded` : "all up";
    return Array.from(values);
  }

  function show(data) {
    const events = (data.event_log || []).slice().sort((a, b) => a.time_s - b.time_s);
    if (!events.length || !data.racks_aligned) return;
    const horizon = Math.max(data.horizon_s || 0, events[events.length - 1].time_s + 1);
    panel.hidden = false;
    panel.querySelector("[data-replay-about]").textContent =
      `Trial ${data.representative_trial}, the run nearest the median: ${events.length} events over ${(horizon / DAY_S).toFixed(1)} days.`;
    // Four columns that fit the side panel: what failed and its effect share one cell.
    body.replaceChildren(...events.slice(0, 300).map((e) => {
      const row = document.createElement("tr");
      const cell = (text, className = "") => Object.assign(document.createElement("td"), { textContent: text, className });
      const what = cell(e.kind);
      if (e.effect && e.effect !== e.kind) what.append(Object.assign(document.createElement("small"), { className: "effect", textContent: e.effect }));
      row.append(cell((e.time_s / DAY_S).toFixed(2), "num"), what,
        cell(e.rack >= 0 ? floor.racks[e.rack]?.name ?? e.rack : "—", "nowrap"),
        cell(e.downtime_s ? `${(e.downtime_s / 60).toFixed(0)} min` : "—", "num"));
      return row;
    }));
    const at = (frame) => (frame / STEPS) * horizon;
    bindReplay(panel, floor, {
      metric: FLASH,
      spec: { label: "Replay: racks down (red) and hit before", unit: "", kind: "run", scale: [0, 1] },
      frames: STEPS + 1,
      step: 4,
      intervalMs: 50,
      valuesAt: (frame) => racksAt(events, horizon, at(frame)),
      timeText: (frame) => `day ${(at(frame) / DAY_S).toFixed(2)}`,
    });
    floor.setMetric(FLASH);
  }

  return whenSucceeded(urls.kindData, show);
}
