// Plotly charts whose figures are built in Python (scenarios/charts/, a module per run kind) and
// shipped as JSON.
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

// Plotly's `responsive` follows window resizes only; a chart whose grid cell changes width
// (a sibling added to the auto-fit grid, a panel opening) is resized by this observer instead.
const resizer = typeof ResizeObserver === "undefined" ? null : new ResizeObserver((entries) => {
  for (const entry of entries) {
    const el = entry.target;
    if (window.Plotly && el._fullLayout && Math.abs(el._fullLayout.width - el.clientWidth) > 1) {
      window.Plotly.Plots.resize(el);
    }
  }
});

const nextFrame = () => new Promise((resolve) => requestAnimationFrame(() => resolve()));

/** The <figure class="chart"> of `chart` in `container`, created (empty) if missing. */
function chartElement(container, chart) {
  let el = container.querySelector(`[data-chart="${chart.id}"]`);
  if (!el) {
    el = document.createElement("figure");
    el.className = "chart";
    el.dataset.chart = chart.id;
    el.setAttribute("aria-label", chart.title);
    container.append(el);
  }
  return el;
}

/**
 * Draw charts into `container`: [{id, title, figure: {data, layout}}]. Each becomes a
 * <figure class="chart" data-chart="id">; existing ones are redrawn in place.
 *
 * Every container is created before any chart is drawn, so the auto-fit grid has settled on its
 * column widths when Plotly measures them (drawing as each is appended gave every chart but the
 * last the width of a one-column grid, clipped at first paint).
 */
export async function renderCharts(container, charts) {
  if (!charts.length) return [];
  const Plotly = await loadPlotly();
  const elements = charts.map((chart) => chartElement(container, chart));
  await nextFrame();
  for (const [i, chart] of charts.entries()) {
    const el = elements[i];
    const layout = { ...chart.figure.layout, autosize: true };
    delete layout.width;
    await Plotly.react(el, chart.figure.data, layout, CONFIG);
    resizer?.observe(el);
  }
  container.dataset.rendered = String(elements.length);
  return elements;
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
