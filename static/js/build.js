// A design being saved in the background: poll its state, move the progress bar, and open the
// design when it is saved (or show the error).

const root = document.getElementById("build");
const bar = root.querySelector(".progress");
const status = root.querySelector("[data-build-status]");
const stage = root.querySelector("[data-build-stage]");
const percentText = root.querySelector("[data-build-percent]");
const error = root.querySelector("[data-build-error]");
const done = root.querySelector("[data-build-done]");
const seen = [];
window.twinBuild = { seen };

function show(state) {
  const percent = Math.round(100 * state.progress);
  seen.push(percent);
  bar.setAttribute("aria-valuenow", String(percent));
  bar.dataset.status = state.status;
  bar.firstElementChild.style.width = `${percent}%`;
  percentText.textContent = `${percent} %`;
  status.textContent = state.status_label;
  status.className = `status ${state.status}`;
  stage.textContent = state.status === "succeeded" ? "saved" : state.stage;
  root.dataset.status = state.status;
  if (state.error) {
    error.textContent = state.error;
    error.hidden = false;
  }
  if (state.design_url) {
    done.hidden = false;
    done.querySelector("a").href = state.design_url;
  }
}

async function poll() {
  try {
    const response = await fetch(root.dataset.statusUrl, { headers: { Accept: "application/json" } });
    if (response.ok) {
      const state = await response.json();
      show(state);
      if (state.status === "succeeded") {
        setTimeout(() => window.location.assign(state.design_url), 600);
        return;
      }
      if (state.status === "failed") return;
    }
  } catch (exc) {
    stage.textContent = "connection lost, retrying…";
  }
  setTimeout(poll, 300);
}

poll();
