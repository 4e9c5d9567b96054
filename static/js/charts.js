// Plotly charts whose figures are built in Python (scenarios/charts.py) and shipped as JSON.
// plotly.min.js (~4.5 MB) is loaded only when a page has charts to draw, so it never delays the
// floor plan's first paint.

let plotlyPromise = null;

/** Load plotly.js once from the URL of the page's [data-plotly-src] element. */
export function loadPlotly() {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!plotlyPromise) {
    plotlyPromise = new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = document.querySelector("[data-plotly-src]").dataset.plotlySrc;
      script.onload = () => resolve(window.Plotly);
      script.onerror = () => reject(new Error("plotly.js failed to load"));
      document.head.append(script);
    });
  }
  return plotlyPromise;
}

const CONFIG = { responsive: true, displaylogo: false, modeBarButtonsToRemove: ["lasso2d", "select2d"] };

/**
 * Draw charts into `container`: [{id, title, figure: {data, layout}}]. Each becomes a
 * <figure class="chart" data-chart="id">; existing ones are redrawn in place.
 */
export async function renderCharts(container, charts) {
  if (!charts.length) return [];
  const Plotly = await loadPlotly();
  const drawn = [];
  for (const chart of charts) {
    let el = container.querySelector(`[data-chart="${chart.id}"]`);
    if (!el) {
      el = document.createElement("figure");
      el.className = "chart";
      el.dataset.chart = chart.id;
      el.setAttribute("aria-label", chart.title);
      container.append(el);
    }
    await Plotly.react(el, chart.figure.data, chart.figure.layout, CONFIG);
    drawn.push(el);
  }
  container.dataset.rendered = String(drawn.length);
  return drawn;
}

/** Charts embedded in the page as <script type="application/json" id="charts-data">. */
export function embeddedCharts(id = "charts-data") {
  const node = document.getElementById(id);
  return node ? JSON.parse(node.textContent) : [];
}

/** Fetch charts JSON from `url` and draw them into `container`. */
export async function fetchCharts(container, url) {
  const response = await fetch(url, { headers: { Accept: "application/json" } });
  if (!response.ok) return [];
  const body = await response.json();
  return renderCharts(container, body.charts || []);
}
