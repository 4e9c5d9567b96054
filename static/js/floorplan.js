// The hall floor plan on a <canvas>: racks on their grid, colored by one metric of a small
// registry (design metrics from the page, run metrics pushed live), with legend, hover card and
// click-to-open. Built for 3,000+ racks: per-rack state lives in typed arrays, a value update
// recolors only the racks whose color bucket changed, and hover is a grid lookup.

const NO_DATA = "#c9ced8";
const FLOOR = "#eef0f4";
const SELECTED = "#1d2330";
const NETWORK_INK = "rgba(29, 35, 48, 0.55)"; // hatching of network racks
const BUCKETS = 256;
const BAND_GAP = 2; // empty tiles between the bands of a long hall

// Sequential "load" ramp (blue -> pale yellow -> red), ColorBrewer RdYlBu reversed; a value at
// or above the scale's max is drawn in the last stop.
const LOAD_STOPS = ["#2c7bb6", "#abd9e9", "#ffffbf", "#fdae61", "#d7191c"];
// Categorical palette: Tableau 10.
const CATEGORY_COLORS = [
  "#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2",
  "#eeca3b", "#b279a2", "#ff9da6", "#9d755d", "#bab0ac",
];

function hexToRgb(hex) {
  const n = parseInt(hex.slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

/** A lookup table of BUCKETS css colors interpolated through `stops`. */
export function colorRamp(stops = LOAD_STOPS) {
  const rgb = stops.map(hexToRgb);
  const table = new Array(BUCKETS);
  for (let i = 0; i < BUCKETS; i += 1) {
    const t = (i / (BUCKETS - 1)) * (rgb.length - 1);
    const k = Math.min(Math.floor(t), rgb.length - 2);
    const f = t - k;
    const c = [0, 1, 2].map((j) => Math.round(rgb[k][j] + (rgb[k + 1][j] - rgb[k][j]) * f));
    table[i] = `rgb(${c[0]},${c[1]},${c[2]})`;
  }
  return table;
}

const LOAD_RAMP = colorRamp(LOAD_STOPS);

/**
 * Normalize one metric description from the server:
 * {label, unit, kind: "design"|"run", scale: [min, max] | "categorical", categories?, values?}.
 */
export function normalizeMetric(name, spec) {
  const categorical = spec.scale === "categorical";
  const [min, max] = categorical ? [0, 0] : spec.scale || [0, 1];
  return {
    name,
    label: spec.label || name,
    unit: spec.unit || "",
    kind: spec.kind || "design",
    categorical,
    categories: spec.categories || [],
    // "fraction of budget" and the like read better as percentages.
    percent: (spec.unit || "").startsWith("fraction"),
    description: spec.description || "",
    min: Number(min),
    max: Number(max),
    values: spec.values ? Float64Array.from(spec.values, (v) => (v === null ? NaN : v)) : null,
  };
}

/** Color bucket of every value: 0..BUCKETS-1 (ramp) or category index; -1 = no data. */
function bucketsOf(metric, values, out) {
  const n = out.length;
  if (!values) {
    out.fill(-1);
    return out;
  }
  if (metric.categorical) {
    for (let i = 0; i < n; i += 1) {
      const v = values[i];
      out[i] = Number.isFinite(v) && v >= 0 ? v % CATEGORY_COLORS.length : -1;
    }
    return out;
  }
  const span = metric.max - metric.min || 1;
  const k = (BUCKETS - 1) / span;
  for (let i = 0; i < n; i += 1) {
    const v = values[i];
    if (v !== v || v === null || v === undefined) {
      out[i] = -1;
    } else {
      const b = ((v - metric.min) * k) | 0;
      out[i] = b < 0 ? 0 : b >= BUCKETS ? BUCKETS - 1 : b;
    }
  }
  return out;
}

function formatValue(metric, v) {
  if (v === undefined || v === null || Number.isNaN(v)) return "—";
  if (metric.categorical) return v < 0 ? "none" : metric.categories[v] ?? String(v);
  if (metric.percent) return `${Math.round(v * 100)} %`;
  const abs = Math.abs(v);
  const digits = abs >= 100 ? 0 : abs >= 10 ? 1 : 2;
  return `${v.toFixed(digits)}${metric.unit ? ` ${metric.unit}` : ""}`;
}

export class FloorPlan {
  /**
   * @param {HTMLElement} root  element holding <canvas>, .fp-legend and .fp-card children
   * @param {object} plan       {rows, columns, racks: [{id, name, row, col, kind}], metrics: {...}}
   * @param {object} options    {metric, onRackClick(rack), maxTilePx, minTilePx}
   */
  constructor(root, plan, options = {}) {
    this.root = root;
    this.canvas = root.querySelector("canvas");
    this.legend = root.querySelector(".fp-legend");
    this.card = root.querySelector(".fp-card");
    this.options = options;
    this.rows = plan.rows;
    this.columns = plan.columns;
    this.racks = plan.racks;
    const n = this.racks.length;
    this.rackRow = new Int32Array(n);
    this.rackCol = new Int32Array(n);
    this.rackKind = new Uint8Array(n); // 0 compute, 1 network (topology.choices.RackKind)
    this.cellRack = new Int32Array(this.rows * this.columns).fill(-1);
    this.racks.forEach((r, i) => {
      this.rackRow[i] = r.row;
      this.rackCol[i] = r.col ?? r.column;
      this.rackKind[i] = r.kind === 1 ? 1 : 0;
      this.cellRack[r.row * this.columns + this.rackCol[i]] = i;
    });
    this.metrics = new Map();
    for (const [name, spec] of Object.entries(plan.metrics || {})) this.register(name, spec);
    this.details = plan.details || [];
    this.current = null;
    this.drawn = new Int16Array(n).fill(-2); // bucket currently painted per rack
    this.scratch = new Int16Array(n);
    this.selected = -1;
    this.hovered = -1;
    this.updates = 0;
    this.lastUpdateMs = 0;
    this._bindEvents();
    this.resize();
    this.setMetric(options.metric && this.metrics.has(options.metric) ? options.metric : this.metrics.keys().next().value);
  }

  /**
   * Add (or replace) a metric in the registry and say so: an "fp:registry" event {name} on the
   * root, the one the metric select (bindMetricSelect) and any kind module listen to.
   */
  register(name, spec) {
    const metric = normalizeMetric(name, spec);
    this.metrics.set(name, metric);
    this.root.dispatchEvent(new CustomEvent("fp:registry", { detail: { name } }));
    return metric;
  }

  /**
   * Layout of the hall on the canvas: tile size and the number of side-by-side bands. A long,
   * narrow hall (e.g. 529 rows x 17 columns) is cut into bands of consecutive rows set side by
   * side like newspaper columns, so it fills the width instead of a thin strip.
   */
  layout() {
    // Large enough that a small hall fills its panel; the height bound keeps it on screen.
    const maxTile = this.options.maxTilePx || 64;
    const minTile = this.options.minTilePx || 3;
    const width = this.root.clientWidth || 800;
    const maxHeight = this.options.maxHeightPx || Math.max(420, window.innerHeight - 160);
    const cols = Math.max(this.columns, 1);
    const rows = Math.max(this.rows, 1);
    let best = { tile: 0, bands: 1, bandRows: rows };
    for (let bands = 1; bands <= 24; bands += 1) {
      // Cut between rack rows (even grid rows; odd rows are aisles).
      const bandRows = Math.ceil(rows / bands / 2) * 2;
      if (bands > 1 && (bands - 1) * bandRows >= rows) break;
      const fit = Math.min(width / (bands * (cols + BAND_GAP) - BAND_GAP), maxHeight / (bandRows + (bands > 1 ? 2 : 0)));
      const tile = Math.max(minTile, Math.min(maxTile, Math.floor(fit)));
      if (tile > best.tile) best = { tile, bands, bandRows };
    }
    return best;
  }

  /** Size the canvas (whole-pixel tiles, device-pixel sharp), place every rack and repaint. */
  resize() {
    const { tile, bands, bandRows } = this.layout();
    this.tile = tile;
    this.bands = bands;
    this.bandRows = bandRows;
    this.bandWidth = (this.columns + BAND_GAP) * tile;
    this.top = bands > 1 ? 2 * tile : 0; // room for the band labels
    this.gap = tile >= 6 ? 1 : 0;
    const n = this.racks.length;
    this.rackX = new Int32Array(n);
    this.rackY = new Int32Array(n);
    for (let i = 0; i < n; i += 1) {
      const band = Math.floor(this.rackRow[i] / bandRows);
      this.rackX[i] = band * this.bandWidth + this.rackCol[i] * tile;
      this.rackY[i] = this.top + (this.rackRow[i] - band * bandRows) * tile;
    }
    const dpr = window.devicePixelRatio || 1;
    const w = bands * this.bandWidth - BAND_GAP * tile;
    const h = this.top + Math.min(bandRows, this.rows) * tile;
    this.canvas.style.width = `${w}px`;
    this.canvas.style.height = `${h}px`;
    this.canvas.width = Math.round(w * dpr);
    this.canvas.height = Math.round(h * dpr);
    this.ctx = this.canvas.getContext("2d", { alpha: false });
    this.ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    this.ctx.fillStyle = "#fff";
    this.ctx.fillRect(0, 0, w, h);
    this.ctx.fillStyle = FLOOR;
    for (let band = 0; band < bands; band += 1) {
      const rowsHere = Math.min(bandRows, this.rows - band * bandRows);
      this.ctx.fillRect(band * this.bandWidth, this.top, this.columns * tile, rowsHere * tile);
    }
    if (bands > 1) this._bandLabels();
    this.drawn.fill(-2);
    if (this.current) this._paint(true);
  }

  _bandLabels() {
    const { ctx, tile } = this;
    ctx.fillStyle = "#6b7385";
    ctx.font = `${Math.max(9, Math.min(12, tile * 1.4))}px system-ui, sans-serif`;
    ctx.textBaseline = "top";
    for (let band = 0; band < this.bands; band += 1) {
      const first = band * this.bandRows;
      const last = Math.min(this.rows, first + this.bandRows) - 1;
      ctx.fillText(`rows ${first / 2 + 1}–${Math.floor(last / 2) + 1}`, band * this.bandWidth, 0);
    }
  }

  /** Color the racks by metric `name`. */
  setMetric(name) {
    const metric = this.metrics.get(name);
    if (!metric) return;
    this.current = metric;
    this.drawn.fill(-2);
    this._paint(true);
    this._renderLegend();
    this.root.dataset.metric = name;
    this.root.dispatchEvent(new CustomEvent("fp:metric", { detail: { name } }));
  }

  /** Replace a metric's per-rack values (a live update); repaints only changed racks. */
  setValues(name, values) {
    const t0 = performance.now();
    let metric = this.metrics.get(name);
    if (!metric) metric = this.register(name, { label: name, kind: "run", scale: [0, 1] });
    const n = this.racks.length;
    if (metric.values && metric.values.length !== n) metric.values = null;
    const fresh = !metric.values;
    if (fresh) metric.values = new Float64Array(n).fill(NaN);
    const dst = metric.values;
    const m = Math.min(n, values.length);
    for (let i = 0; i < m; i += 1) {
      const v = values[i];
      dst[i] = v === null ? NaN : v;
    }
    if (metric === this.current) this._paint(false);
    this.updates += 1;
    this.lastUpdateMs = performance.now() - t0;
    if (this.hovered >= 0) this._showCard(this.hovered);
    // A metric with values is one the select lists: the registry changed for it too.
    if (fresh) this.root.dispatchEvent(new CustomEvent("fp:registry", { detail: { name } }));
  }

  /** Per-rack color of the current metric (for tests): css color string. */
  colorOf(index) {
    const b = this.drawn[index];
    return this._color(b);
  }

  _color(bucket) {
    if (bucket < 0) return NO_DATA;
    return this.current.categorical ? CATEGORY_COLORS[bucket] : LOAD_RAMP[bucket];
  }

  _paint(full) {
    const metric = this.current;
    const buckets = bucketsOf(metric, metric.values, this.scratch);
    const { ctx, gap } = this;
    const size = this.tile - gap;
    const drawn = this.drawn;
    const xs = this.rackX;
    const ys = this.rackY;
    const n = buckets.length;
    // Group the racks by bucket so fillStyle changes once per color, not once per rack.
    const order = [];
    for (let i = 0; i < n; i += 1) {
      if (full || buckets[i] !== drawn[i] || i === this.selected) order.push(i);
    }
    order.sort((a, b) => buckets[a] - buckets[b]);
    let style = -3;
    for (let k = 0; k < order.length; k += 1) {
      const i = order[k];
      const b = buckets[i];
      if (b !== style) {
        ctx.fillStyle = this._color(b);
        style = b;
      }
      ctx.fillRect(xs[i], ys[i], size, size);
      drawn[i] = b;
    }
    this._hatchNetwork(order);
    if (this.selected >= 0) this._outline(this.selected);
    if (!this.root.dataset.painted) performance.mark("floorplan:first-paint");
    this.root.dataset.painted = String((Number(this.root.dataset.painted) || 0) + 1);
  }

  /**
   * Diagonal hatching and a dark border on the network racks among `indices`, drawn over their
   * color so compute and network racks stay apart under every metric.
   */
  _hatchNetwork(indices) {
    const { ctx, tile, gap } = this;
    const size = tile - gap;
    if (size < 4) return;
    ctx.save();
    ctx.strokeStyle = NETWORK_INK;
    ctx.lineWidth = Math.max(1, size / 14);
    ctx.beginPath();
    const step = Math.max(3, size / 4);
    for (const i of indices) {
      if (this.rackKind[i] !== 1) continue;
      const x = this.rackX[i];
      const y = this.rackY[i];
      // Each stripe runs between two points of the tile's border: no clipping needed.
      for (let d = step; d < 2 * size; d += step) {
        ctx.moveTo(x + Math.min(d, size), y + Math.max(0, d - size));
        ctx.lineTo(x + Math.max(0, d - size), y + Math.min(d, size));
      }
    }
    ctx.stroke();
    ctx.restore();
    for (const i of indices) {
      if (this.rackKind[i] !== 1) continue;
      ctx.strokeStyle = NETWORK_INK;
      ctx.lineWidth = Math.max(1, size / 12);
      const inset = ctx.lineWidth / 2;
      ctx.strokeRect(this.rackX[i] + inset, this.rackY[i] + inset, size - 2 * inset, size - 2 * inset);
    }
  }

  _outline(i) {
    const { ctx, tile, gap } = this;
    ctx.strokeStyle = SELECTED;
    ctx.lineWidth = Math.max(1, tile / 8);
    const inset = ctx.lineWidth / 2;
    ctx.strokeRect(this.rackX[i] + inset, this.rackY[i] + inset, tile - gap - 2 * inset, tile - gap - 2 * inset);
  }

  _renderLegend() {
    if (!this.legend) return;
    const m = this.current;
    this.legend.replaceChildren();
    const title = document.createElement("span");
    title.className = "fp-legend-title";
    title.textContent = m.unit ? `${m.label} (${m.percent ? m.unit.replace(/^fraction/, "%") : m.unit})` : m.label;
    title.title = m.description;
    this.legend.append(title);
    const items = m.categorical
      ? m.categories.map((label, i) => [CATEGORY_COLORS[i % CATEGORY_COLORS.length], label])
      : [];
    if (m.categorical) {
      for (const [color, label] of items) this.legend.append(swatch(color, label));
    } else {
      const bar = document.createElement("span");
      bar.className = "fp-ramp";
      bar.style.background = `linear-gradient(to right, ${LOAD_STOPS.join(", ")})`;
      const bare = { ...m, unit: "" };
      this.legend.append(tick(formatValue(bare, m.min)), bar, tick(`≥ ${formatValue(bare, m.max)}`));
    }
    this.legend.append(swatch(NO_DATA, "no data"));
    if (this.rackKind.includes(1)) {
      const item = swatch("#fff", "network rack");
      item.querySelector(".swatch").classList.add("network");
      item.dataset.networkKey = "";
      this.legend.append(item);
    }
  }

  _bindEvents() {
    let pending = null;
    this.canvas.addEventListener("mousemove", (event) => {
      pending = event;
      if (this._hoverFrame) return;
      this._hoverFrame = requestAnimationFrame(() => {
        this._hoverFrame = 0;
        this._hover(pending);
      });
    });
    this.canvas.addEventListener("mouseleave", () => {
      this.hovered = -1;
      if (this.card) this.card.hidden = true;
    });
    this.canvas.addEventListener("click", (event) => {
      const i = this.rackAt(event);
      if (i < 0) return;
      this.select(i);
      if (this.options.onRackClick) this.options.onRackClick(this.racks[i], i);
    });
    let timer = 0;
    window.addEventListener("resize", () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        const next = this.layout();
        if (next.tile !== this.tile || next.bands !== this.bands) this.resize();
      }, 150);
    });
  }

  /** Index of the rack under a mouse event, or -1. */
  rackAt(event) {
    const rect = this.canvas.getBoundingClientRect();
    const x = event.clientX - rect.left;
    const y = event.clientY - rect.top - this.top;
    const band = Math.floor(x / this.bandWidth);
    const col = Math.floor((x - band * this.bandWidth) / this.tile);
    const inBand = Math.floor(y / this.tile);
    const row = band * this.bandRows + inBand;
    if (x < 0 || y < 0 || col >= this.columns || inBand >= this.bandRows || row >= this.rows) return -1;
    return this.cellRack[row * this.columns + col];
  }

  /** Mark rack `i` as selected (outlined). */
  select(i) {
    const previous = this.selected;
    this.selected = i;
    if (previous >= 0) this.drawn[previous] = -2;
    this._paint(false);
  }

  _hover(event) {
    const i = this.rackAt(event);
    this.hovered = i;
    this.canvas.style.cursor = i >= 0 ? "pointer" : "default";
    if (!this.card) return;
    if (i < 0) {
      this.card.hidden = true;
      return;
    }
    this._showCard(i);
    const rect = this.root.getBoundingClientRect();
    const x = event.clientX - rect.left + 14;
    const y = event.clientY - rect.top + 14;
    this.card.style.left = `${Math.min(x, rect.width - this.card.offsetWidth - 4)}px`;
    this.card.style.top = `${y}px`;
  }

  _showCard(i) {
    const rack = this.racks[i];
    const lines = [];
    for (const m of this.metrics.values()) {
      if (!m.values) continue;
      lines.push(`<div${m === this.current ? ' class="current"' : ""}><span>${escapeHtml(m.label)}</span><b>${escapeHtml(formatValue(m, m.values[i]))}</b></div>`);
    }
    for (const d of this.details) {
      const v = d.values?.[i];
      if (v !== undefined && v !== null) lines.push(`<div><span>${escapeHtml(d.label)}</span><b>${escapeHtml(`${v.toFixed(1)} ${d.unit}`)}</b></div>`);
    }
    const kind = this.rackKind[i] === 1 ? " · network rack" : "";
    this.card.innerHTML = `<strong>${escapeHtml(rack.name)}</strong> <small>row ${rack.row}, col ${rack.col ?? rack.column}${kind}</small>${lines.join("")}`;
    this.card.hidden = false;
  }
}

function swatch(color, label) {
  const item = document.createElement("span");
  item.className = "fp-item";
  const box = document.createElement("span");
  box.className = "swatch";
  box.style.background = color;
  item.append(box, document.createTextNode(` ${label}`));
  return item;
}

function tick(text) {
  const t = document.createElement("span");
  t.className = "fp-tick";
  t.textContent = text;
  return t;
}

function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * The page's floor-plan JSON (``scenarios.selectors.design_floor_plan_json``) as the renderer's
 * plan: metric descriptions merged with their values, plus per-rack detail lines for the card.
 */
export function planFromJson(json, runValues = {}) {
  const metrics = {};
  for (const [name, spec] of Object.entries(json.metrics || {})) {
    const values = runValues[name] ?? json.values?.[name] ?? null;
    metrics[name] = { ...spec, values };
  }
  const details = [];
  if (json.power) {
    details.push({ label: "Nameplate", unit: "kW", values: json.power.nameplate_kw });
    details.push({ label: "Budget", unit: "kW", values: json.power.budget_kw });
  }
  return { rows: json.rows, columns: json.columns, racks: json.racks, metrics, details };
}

/** Keep a <select> listing the metrics that have values, and switch the floor plan on change. */
export function bindMetricSelect(floor, select) {
  if (!select) return;
  const fill = () => {
    const current = floor.current?.name;
    // The current metric stays listed even before it has values (a run still streaming), so the
    // select always names what the legend shows.
    const listed = [...floor.metrics.values()].filter((m) => m.values || m.name === current);
    select.replaceChildren(...listed.map((m) => new Option(m.label, m.name, false, m.name === current)));
  };
  fill();
  select.addEventListener("change", () => floor.setMetric(select.value));
  floor.root.addEventListener("fp:metric", fill);
  floor.root.addEventListener("fp:registry", fill); // a metric registered or given its first values
}

export { escapeHtml, formatValue };
