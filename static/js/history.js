// The history page: under each version, links to the runs that simulated it (the scenarios
// app serves them; the topology page does not know about runs).

const root = document.getElementById("history");

async function addRuns() {
  const response = await fetch(root.dataset.runsSrc, { headers: { Accept: "application/json" } });
  if (!response.ok) return;
  const { versions } = await response.json();
  for (const [version, runs] of Object.entries(versions)) {
    const slot = root.querySelector(`[data-runs-of="${version}"]`);
    if (!slot || !runs.length) continue;
    slot.append("Runs on this version: ");
    runs.forEach((run, i) => {
      if (i) slot.append(", ");
      const link = Object.assign(document.createElement("a"), { href: run.url, textContent: run.label });
      link.dataset.run = run.id;
      slot.append(link);
    });
    slot.hidden = false;
  }
  root.dataset.runsLoaded = "";
}

addRuns();
