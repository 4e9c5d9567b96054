// A run's figures as the server words them ({key, label, text}: the kind's own labels and
// formats, the same live and after a reload), as a <dl>.

/** Render `figures` ([{key, label, text}]) into the <dl> `target`. */
export function renderFigures(target, figures) {
  if (!target || !Array.isArray(figures)) return;
  target.replaceChildren(...figures.map(({ key, label, text }) => {
    const dt = document.createElement("dt");
    dt.textContent = label;
    const dd = document.createElement("dd");
    dd.textContent = text;
    dd.dataset.key = key;
    const div = document.createElement("div");
    div.append(dt, dd);
    return div;
  }));
}
