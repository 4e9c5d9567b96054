// The scenario editor.
// - Picking a model preset fills the model inputs with the published architecture (they stay
//   editable: an input changed afterwards overrides the preset), says where the numbers come
//   from, and asks the server for the fastest layout that fits the design's GPUs (the form's
//   data-propose-url), which it fills into the layout inputs.
// - On the scenario page, the run buttons run what the page shows: with unsaved edits in the
//   editor they become "Save and run" and post the editor's inputs too (the server saves, then
//   runs the saved scenario; both or neither).

const presets = JSON.parse(document.getElementById("model-presets")?.textContent || "{}");
const select = document.querySelector('select[data-path="job.model.preset"]');
const editor = select?.form || document.querySelector("form.scenario-form");

function setValue(input, value) {
  input.value = String(value);
  input.dispatchEvent(new Event("input", { bubbles: true }));
}

// The editor's inputs as the query of the layout proposal: an on/off input is always sent
// ("true"/"false"), so a blank one is not read as "off".
function proposalQuery(form) {
  const query = new URLSearchParams();
  for (const input of form.elements) {
    if (!input.name || input.disabled || input.type === "hidden" || input.type === "submit") continue;
    if (input.type === "checkbox") query.set(input.name, input.checked ? "true" : "false");
    else if (input.value !== "") query.set(input.name, input.value);
  }
  return query;
}

const GIB = (value) => (Number.isInteger(value) || value >= 100 ? value.toFixed(0) : value.toFixed(1));

let proposals = 0; // the latest request wins: an earlier answer arriving late is dropped

async function proposeLayout(form) {
  const note = form.querySelector("[data-layout-proposal]");
  const url = form.dataset.proposeUrl;
  if (!note || !url) return;
  const mine = ++proposals;
  note.hidden = false;
  note.className = "help layout-proposal pending";
  note.textContent = "Proposing a layout that fits this design's GPUs…";
  let body;
  try {
    const response = await fetch(`${url}?${proposalQuery(form)}`, { headers: { Accept: "application/json" } });
    body = await response.json();
    if (!response.ok) {
      const messages = Object.values(body.errors || {}).flat().map((e) => e.message || e);
      throw new Error(messages.join(" ") || `status ${response.status}`);
    }
  } catch (error) {
    if (mine !== proposals) return;
    note.className = "help layout-proposal bad";
    note.textContent = `No layout proposed: ${error.message}`;
    return;
  }
  if (mine !== proposals) return;
  if (!body.layout) {
    note.className = "help layout-proposal bad";
    note.textContent = `No layout fits in ${GIB(body.hbm_gib)} GiB per GPU (${body.gpu}): ${body.reason}. Add servers or choose a smaller model.`;
    return;
  }
  for (const [name, value] of Object.entries(body.fields)) {
    const input = form.elements.namedItem(name);
    if (input) setValue(input, value);
  }
  note.className = "help layout-proposal ok";
  note.textContent = `Layout proposed to fit: ${GIB(body.memory_gib_per_gpu)} GiB per GPU of ${GIB(body.hbm_gib)} `
    + `(${body.gpu}, ${body.gpus.toLocaleString()} GPUs; from a quick layout search: a Layout search run ranks them all).`;
}

if (select) {
  const form = select.form;
  const source = document.createElement("p");
  source.className = "help";
  source.dataset.presetSource = "";
  select.closest(".field").append(source);
  const showSource = () => { source.textContent = presets[select.value]?.source ? `Source: ${presets[select.value].source}` : ""; };
  select.addEventListener("change", () => {
    const preset = presets[select.value];
    if (preset) {
      // Clear the model's inputs first so a key the preset leaves out (MoE on a dense model) does
      // not linger from the previous choice.
      for (const input of form.querySelectorAll('[data-path^="job.model."]')) {
        if (input !== select) setValue(input, "");
      }
      for (const [name, value] of Object.entries(preset.fields)) {
        const input = form.elements.namedItem(name);
        if (input) setValue(input, value);
      }
      // A folded part the preset fills (the MoE inputs) opens.
      for (const name of Object.keys(preset.fields)) {
        const folded = form.elements.namedItem(name)?.closest("details");
        if (folded) folded.open = true;
      }
      proposeLayout(form);
    }
    showSource();
  });
  showSource();
}

// The layout can be proposed again at any time (after a batch or cluster change).
const proposeButton = editor?.querySelector("[data-propose-layout]");
if (proposeButton && editor.dataset.proposeUrl) {
  proposeButton.hidden = false;
  proposeButton.addEventListener("click", () => proposeLayout(editor));
}

// Run what you see: the run buttons of the scenario page against the editor's saved state.
const runForms = [...document.querySelectorAll("form.run-form")];
if (editor && editor.matches("[data-scenario-editor]") && runForms.length) {
  const snapshot = (form) => JSON.stringify([...new FormData(form).entries()]);
  const saved = snapshot(editor);
  const note = document.querySelector("[data-dirty-note]");
  // An editor the server sent back with errors holds inputs that were never saved.
  const isDirty = () => editor.hasAttribute("data-unsaved") || snapshot(editor) !== saved;
  const show = () => {
    const dirty = isDirty();
    if (note) note.hidden = !dirty;
    for (const button of document.querySelectorAll("button[data-run-kind]")) {
      button.textContent = dirty ? `Save and run: ${button.dataset.label}` : button.dataset.label;
      button.classList.toggle("save-and-run", dirty);
    }
  };
  editor.addEventListener("input", show);
  editor.addEventListener("change", show);
  for (const form of runForms) {
    form.addEventListener("submit", () => {
      for (const old of form.querySelectorAll("[data-copied]")) old.remove();
      if (!isDirty()) return;
      const taken = new Set(["csrfmiddlewaretoken", "revision", "kind"]);
      const add = (name, value) => {
        const input = document.createElement("input");
        input.type = "hidden";
        input.name = name;
        input.value = value;
        input.dataset.copied = "";
        form.append(input);
      };
      for (const [name, value] of new FormData(editor).entries()) {
        if (!taken.has(name)) add(name, value);
      }
      add("save_first", "1");
    });
  }
  show();
}

// Large numbers read with their unit prefix next to the input ("1e12" -> "≈ 1.0 T").
const PREFIXES = [[1e15, "P"], [1e12, "T"], [1e9, "G"], [1e6, "M"]];

function humanNumber(value) {
  const found = PREFIXES.find(([size]) => Math.abs(value) >= size);
  return found ? `≈ ${(value / found[0]).toFixed(1)} ${found[1]}` : "";
}

for (const input of document.querySelectorAll('.scenario-form input[type="number"]')) {
  const hint = document.createElement("span");
  hint.className = "number-hint";
  hint.dataset.numberHint = input.name;
  input.after(hint);
  const show = () => { hint.textContent = input.value === "" ? "" : humanNumber(Number(input.value)); };
  input.addEventListener("input", show);
  show();
}
