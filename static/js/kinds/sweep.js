// The scaling sweep's part of the run page: a table row per point, upserted as points finish
// (partial messages) and from the stored state.

/** Handlers of the sweep's live messages on the run page `page`. */
export function init(page) {
  const panel = page.querySelector("[data-points-panel]");
  const body = page.querySelector("[data-points]");

  function showPoint(point) {
    panel.hidden = false;
    let row = body.querySelector(`tr[data-index="${point.index}"]`);
    if (!row) {
      row = document.createElement("tr");
      row.dataset.index = point.index;
      const after = [...body.children].find((r) => Number(r.dataset.index) > point.index);
      body.insertBefore(row, after || null);
    }
    // A point whose job does not fit shows why, never a step time or an MFU.
    const cells = point.infeasible?.length
      ? [point.gpus?.toLocaleString("en-US"), `does not fit: ${point.infeasible.join("; ")}`, "", ""]
      : point.error
      ? [point.gpus?.toLocaleString("en-US"), point.error, "", ""]
      : [point.gpus.toLocaleString("en-US"), `${point.step_time_s.toFixed(3)} s`,
         Math.round(point.tokens_per_s).toLocaleString("en-US"), `${(point.mfu * 100).toFixed(1)} %`];
    row.replaceChildren(...cells.map((text) => Object.assign(document.createElement("td"), { className: "num", textContent: text ?? "" })));
  }

  const showPoints = (summary) => { if (Array.isArray(summary?.points)) summary.points.forEach(showPoint); };
  return {
    // A page opened mid-run shows the points done so far (the run's stored partial result).
    state: (run) => { showPoints(run.partial); showPoints(run.summary); },
    partial: (msg) => { if (msg.summary?.point) showPoint(msg.summary.point); },
    status: (msg) => showPoints(msg.summary),
  };
}
