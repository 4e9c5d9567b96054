// The power run's part of the run page: the busiest feeds, and the racks' power over the job's
// life replayed on the floor plan with a time slider (coarse series served as run arrays).

import { whenSucceeded } from "../kind_data.js";
import { bindReplay } from "../replay.js";

const REPLAY = "power_replay";
const FRAMES = 120; // columns the server averages the coarse series down to

export function init(page, { floor, urls }) {
  const panel = page.querySelector("[data-power-panel]");

  async function array(name) {
    const response = await fetch(`${urls.array(name)}?frames=${FRAMES}`, { headers: { Accept: "application/octet-stream" } });
    if (!response.ok) return null;
    return { shape: JSON.parse(response.headers.get("X-Shape")), values: new Float32Array(await response.arrayBuffer()) };
  }

  async function loadReplay(data) {
    const [series, budgets] = await Promise.all([array("power_coarse_rack_kw"), array("power_rack_budget_kw")]);
    if (!series || !budgets || series.shape[0] !== floor.racks.length || !series.shape[1]) return;
    const frames = series.values; // racks x frames, kW
    const budget = budgets.values;
    const nFrames = series.shape[1];
    const frameS = ((data.coarse?.horizon_s ?? data.coarse?.resolution_s * nFrames) || nFrames) / nFrames;
    panel.hidden = false;
    panel.querySelector("[data-power-about]").textContent = `Job events from ${data.event_source}: ${nFrames} frames; racks coloured by their draw over budget.`;
    bindReplay(panel, floor, {
      metric: REPLAY,
      spec: { label: "Replay: rack power vs budget", unit: "fraction of budget", kind: "run", scale: [0, 1.2] },
      frames: nFrames,
      intervalMs: 60,
      valuesAt: (frame) => Array.from(floor.racks, (_, r) => {
        const kw = frames[r * nFrames + frame];
        return budget && budget[r] > 0 ? kw / budget[r] : null;
      }),
      timeText: (frame) => `hour ${((frame * frameS) / 3600).toFixed(1)}`,
    });
  }

  function showFeeds(feeds) {
    const table = page.querySelector("[data-feeds-panel]");
    if (!feeds?.length) return;
    table.hidden = false;
    const pct = (v) => `${(v * 100).toFixed(0)} %`;
    table.querySelector("[data-feeds]").replaceChildren(...feeds.map((f) => {
      const row = document.createElement("tr");
      const cells = [f.name, `${f.peak_kw.toFixed(1)} kW`, pct(f.utilisation), pct(f.side_loss)];
      cells.forEach((text, i) => row.append(Object.assign(document.createElement("td"), {
        textContent: text,
        title: i === 0 ? `panel ${f.panel}, side ${f.side}` : "",
        className: `${i >= 1 ? "num" : "nowrap"}${(i === 2 && f.utilisation > 1) || (i === 3 && f.side_loss > 1) ? " worse" : ""}`,
      })));
      return row;
    }));
  }

  return whenSucceeded(urls.kindData, (data) => {
    showFeeds(data.feeds);
    if (data.racks_aligned && data.coarse) loadReplay(data);
  });
}
