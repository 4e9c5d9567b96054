// The new-design page: a live preview of what the generator would build (totals and floor
// plan), fetched as the parameters change; errors show next to the field they name.

const form = document.getElementById("design-new");
const panel = document.getElementById("preview");
const state = panel.querySelector("[data-preview-state]");
const body = panel.querySelector("[data-preview-body]");
const PARAMS = ["generator", "server", "nodes", "oversubscription", "nic_gbps", "su_nodes", "switch", "tiers"];
let timer = 0;
let latest = 0;
let shown = null; // the query whose preview is on the page

function clearErrors() {
  form.querySelectorAll("[data-preview-error]").forEach((el) => el.remove());
  form.querySelectorAll(".field.preview-error").forEach((el) => el.classList.remove("preview-error", "has-error"));
}

function showErrors(errors) {
  clearErrors();
  const lines = [];
  for (const [field, messages] of Object.entries(errors)) {
    const box = form.querySelector(`.field[data-field="${field}"]`);
    if (box) {
      box.classList.add("has-error", "preview-error");
      const list = document.createElement("ul");
      list.className = "errorlist";
      list.dataset.previewError = field;
      for (const m of messages) list.append(Object.assign(document.createElement("li"), { textContent: m }));
      box.append(list);
    } else {
      lines.push(...messages);
    }
  }
  state.textContent = lines.length ? lines.join(" ") : "Fix the highlighted field to see the preview.";
  state.classList.add("error");
  body.classList.add("stale");
}

async function refresh() {
  const query = new URLSearchParams();
  for (const name of PARAMS) {
    const field = form.elements[name];
    if (field && field.value !== "") query.set(name, field.value);
  }
  if (query.toString() === shown) return; // nothing changed (a change event after an input)
  shown = query.toString();
  const ticket = ++latest;
  state.textContent = "Computing the totals…";
  state.classList.remove("error");
  const response = await fetch(`${form.dataset.previewUrl}?${query}`, { headers: { Accept: "application/json" } });
  if (ticket !== latest) return; // a newer request is on its way
  const data = await response.json();
  if (!data.ok) {
    showErrors(data.errors || {});
    return;
  }
  clearErrors();
  body.innerHTML = data.html;
  body.classList.remove("stale");
  const s = data.summary;
  state.textContent = `${s.gpus.toLocaleString()} GPUs on ${s.servers.toLocaleString()} servers in ${s.racks.toLocaleString()} racks`;
  window.twinPreview = { summary: s, count: (window.twinPreview?.count || 0) + 1 };
}

form.addEventListener("input", (event) => {
  if (!PARAMS.includes(event.target.name)) return;
  clearTimeout(timer);
  timer = setTimeout(refresh, 250);
});
form.addEventListener("change", (event) => {
  if (PARAMS.includes(event.target.name)) refresh();
});
refresh();
