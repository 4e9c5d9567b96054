// The scenario editor: picking a model preset fills the model inputs with the published
// architecture (they stay editable: an input changed afterwards overrides the preset) and says
// where the numbers come from.

const presets = JSON.parse(document.getElementById("model-presets")?.textContent || "{}");
const select = document.querySelector('select[data-path="job.model.preset"]');

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
        if (input !== select) input.value = "";
      }
      for (const [name, value] of Object.entries(preset.fields)) {
        const input = form.elements.namedItem(name);
        if (input) input.value = String(value);
      }
    }
    showSource();
  });
  showSource();
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
