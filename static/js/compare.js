// The comparison page: draws the embedded charts and toggles "only rows that differ".

import { embeddedCharts, renderCharts } from "./charts.js";

const table = document.querySelector("[data-compare]");
const toggle = document.querySelector("[data-only-diff]");
toggle?.addEventListener("change", () => table.classList.toggle("only-diff", toggle.checked));

renderCharts(document.getElementById("charts"), embeddedCharts());
