// The few numbers of a run summary (the "brief" summary live messages carry), as a <dl>.

const FIGURES = {
  step_time_s: ["Step time", (v) => `${v.toFixed(3)} s`],
  mfu: ["MFU", (v) => `${(v * 100).toFixed(1)} %`],
  model_tflops_per_gpu: ["Model TFLOP/s per GPU", (v) => v.toFixed(0)],
  tokens_per_s: ["Tokens/s", (v) => Math.round(v).toLocaleString("en-US")],
  memory_gib_per_gpu: ["Memory per GPU", (v) => `${v.toFixed(1)} GiB`],
  fits: ["Fits in HBM", (v) => (v ? "yes" : "no")],
  max_link_utilization: ["Hottest link", (v) => `${(v * 100).toFixed(0)} %`],
  time_to_train_days: ["Time to train", (v) => (v >= 1 ? `${v.toFixed(1)} days` : `${(v * 24).toFixed(1)} hours`)],
  gpus: ["GPUs", (v) => v.toLocaleString("en-US")],
  points: ["Sweep points", (v) => (Array.isArray(v) ? v.length : v)],
  knee_gpus: ["Adding GPUs stops paying at", (v) => `${v.toLocaleString("en-US")} GPUs`],
  best_time_to_train_gpus: ["Fastest to train at", (v) => `${v.toLocaleString("en-US")} GPUs`],
  failed_points: ["Failed points", (v) => (Array.isArray(v) ? v.length : v)],
  candidates: ["Layouts tried", (v) => (Array.isArray(v) ? v.length : v)],
  valid: ["Valid layouts", (v) => v],
  best: ["Best layout", (v) => layoutLabel(Array.isArray(v) ? v[0] : v)],
};

function layoutLabel(row) {
  if (!row || typeof row !== "object") return row ?? "—";
  const degrees = ["tp", "pp", "dp", "cp", "ep", "vpp"]
    .filter((k) => row[k] !== undefined && (row[k] !== 1 || ["tp", "pp", "dp"].includes(k)))
    .map((k) => `${k}${row[k]}`)
    .join(" ");
  return `${degrees} · mb${row.micro_batch} · ${row.recompute}${row.zero ? ` · ZeRO-${row.zero}` : ""}`;
}

const shown = new WeakMap();

/** Render `summary` into the <dl> `target`; with {merge: true} keep figures not in `summary`. */
export function renderSummary(target, kind, summary, { merge = false } = {}) {
  if (!target || !summary) return;
  const values = merge ? { ...(shown.get(target) || {}), ...summary } : { ...summary };
  shown.set(target, values);
  const items = [];
  for (const [key, [label, format]] of Object.entries(FIGURES)) {
    const v = values[key];
    if (v === undefined || v === null) continue;
    const dt = document.createElement("dt");
    dt.textContent = label;
    const dd = document.createElement("dd");
    dd.textContent = String(format(v));
    dd.dataset.key = key;
    const div = document.createElement("div");
    div.append(dt, dd);
    items.push(div);
  }
  target.replaceChildren(...items);
}
