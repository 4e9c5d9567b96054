// The power run's part of the run page: the busiest feeds, and the racks' power over the job's
// life replayed on the floor plan with a time slider (coarse series served as run arrays).

const REPLAY = "power_replay";

export function init(page, { floor, run }) {
  const panel = page.querySelector("[data-power-panel]");
  const slider = panel.querySelector("[data-replay]");
  let frames = null; // Float32Array (racks x frames), kW
  let budget = null;
  let nFrames = 0;
  let frameS = 1;
  let timer = 0;

  function paint(frame) {
    const n = floor.racks.length;
    const values = new Array(n);
    for (let r = 0; r < n; r += 1) {
      const kw = frames[r * nFrames + frame];
      values[r] = budget && budget[r] > 0 ? kw / budget[r] : null;
    }
    floor.setValues(REPLAY, values);
    panel.querySelector("[data-replay-time]").textContent = `hour ${((frame * frameS) / 3600).toFixed(1)}`;
  }

  async function array(name) {
    const response = await fetch(`/runs/${run.id}/arrays/${name}/?frames=120`, { headers: { Accept: "application/octet-stream" } });
    if (!response.ok) return null;
    return { shape: JSON.parse(response.headers.get("X-Shape")), values: new Float32Array(await response.arrayBuffer()) };
  }

  async function loadReplay(data) {
    const [series, budgets] = await Promise.all([array("power_coarse_rack_kw"), array("power_rack_budget_kw")]);
    if (!series || !budgets || series.shape[0] !== floor.racks.length) return;
    frames = series.values;
    nFrames = series.shape[1];
    budget = budgets.values;
    frameS = ((data.coarse?.horizon_s ?? data.coarse?.resolution_s * nFrames) || nFrames) / nFrames;
    slider.max = String(nFrames - 1);
    panel.hidden = false;
    panel.querySelector("[data-power-about]").textContent = `Job events from ${data.event_source}: ${nFrames} frames; racks coloured by their draw over budget.`;
    floor.register(REPLAY, { label: "Replay: rack power vs budget", unit: "fraction of budget", kind: "run", scale: [0, 1.2] });
    floor.root.dispatchEvent(new CustomEvent("fp:registry"));
    paint(0);
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

  slider.addEventListener("input", () => paint(Number(slider.value)));
  panel.querySelector("[data-play]").addEventListener("click", (event) => {
    if (timer) { clearInterval(timer); timer = 0; event.target.textContent = "Play"; return; }
    event.target.textContent = "Pause";
    timer = setInterval(() => {
      slider.value = String((Number(slider.value) + 1) % nFrames);
      paint(Number(slider.value));
    }, 60);
  });

  async function load() {
    const response = await fetch(`/runs/${run.id}/kind-data/`, { headers: { Accept: "application/json" } });
    if (!response.ok) return;
    const data = await response.json();
    showFeeds(data.feeds);
    if (data.racks_aligned && data.coarse) loadReplay(data);
  }

  return {
    state: (state) => { if (state.status === "succeeded") load(); },
    status: (msg) => { if (msg.status === "succeeded") load(); },
  };
}
