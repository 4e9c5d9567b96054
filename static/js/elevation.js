// The rack panel opened by a click on the floor plan: elevation (servers and switches by U,
// top U first), the rack's links by device and tier, and its power feeds.

import { escapeHtml } from "./floorplan.js";

const U_PX = 14;

/** Render the rack JSON of `topology:rack-detail` into `panel` (a .rack-panel element). */
export function renderRack(panel, rack, extra = {}) {
  panel.querySelector(".rack-title").textContent = `${rack.name} · ${rack.kind_label}`;
  const body = panel.querySelector(".rack-body");
  const facts = [
    ["Position", `row ${rack.row}, column ${rack.col}`],
    ["Height", `${rack.u_height} U`],
    ["Nameplate", `${rack.nameplate_kw.toFixed(1)} kW of ${rack.power_budget_kw.toFixed(1)} kW budget`],
    ...Object.entries(extra),
  ];
  body.innerHTML = `
    <dl class="figures">${facts.map(([k, v]) => `<div><dt>${escapeHtml(k)}</dt><dd>${escapeHtml(v)}</dd></div>`).join("")}</dl>
    <h3>Elevation</h3>
    <div class="elevation" style="grid-template-rows: repeat(${rack.u_height}, ${U_PX}px)">${elevationCells(rack)}</div>
    <div class="rack-lists">
      <h3>Links (${rack.links.reduce((s, l) => s + l.count, 0)})</h3>
      ${linksTable(rack.links)}
      <h3>Power feeds</h3>
      ${feedsTable(rack.feeds)}
    </div>`;
  panel.hidden = false;
}

function elevationCells(rack) {
  const cells = [];
  for (let u = rack.u_height; u >= 1; u -= 1) {
    const line = rack.u_height - u + 1;
    cells.push(`<div class="u" style="grid-row:${line};grid-column:1">${u}</div>`);
    cells.push(`<div class="slot" style="grid-row:${line};grid-column:2"></div>`);
  }
  for (const d of rack.devices) {
    const top = d.u + d.units - 1;
    const line = rack.u_height - top + 1;
    const title = `${d.name} · ${d.type} · U${d.u}${d.units > 1 ? `–U${top}` : ""}`;
    cells.push(
      `<div class="device ${d.kind}" title="${escapeHtml(title)}" data-device="${escapeHtml(d.name)}" ` +
        `style="grid-row:${line} / span ${d.units};grid-column:2">${escapeHtml(d.name)} <small>&nbsp;${escapeHtml(d.type)}</small></div>`,
    );
  }
  return cells.join("");
}

// Rows of the links table shown before "show all": a leaf rack has a row per switch and tier,
// hundreds on a large fabric, which made the panel thousands of pixels tall.
const LINK_ROWS_SHOWN = 8;

function linksTable(links) {
  if (!links.length) return "<p class=\"meta\">No scale-out links.</p>";
  const byTier = new Map();
  for (const l of links) {
    const tier = byTier.get(l.tier) || { devices: new Set(), count: 0, speeds: new Set() };
    tier.devices.add(l.device);
    tier.count += l.count;
    tier.speeds.add(l.gbps);
    byTier.set(l.tier, tier);
  }
  const summary = [...byTier]
    .map(([name, t]) => `<tr><td>${escapeHtml(name)}</td><td class="num">${t.devices.size}</td>` +
      `<td class="num">${t.count.toLocaleString("en-US")} × ${[...t.speeds].join("/")} Gb/s</td></tr>`)
    .join("");
  const row = (l) =>
    `<tr><td>${escapeHtml(l.device)}</td><td>${escapeHtml(l.tier)}</td><td class="num">${l.count} × ${l.gbps} Gb/s</td>` +
    `<td>${escapeHtml(l.peers.join(", "))}${l.more ? ` +${l.more}` : ""}</td></tr>`;
  const head = "<thead><tr><th>Device</th><th>Tier</th><th>Links</th><th>To</th></tr></thead>";
  const first = links.slice(0, LINK_ROWS_SHOWN).map(row).join("");
  const rest = links.slice(LINK_ROWS_SHOWN);
  const more = rest.length
    ? `<details data-more-links><summary>${rest.length.toLocaleString("en-US")} more device rows</summary>` +
      `<table>${head}<tbody>${rest.map(row).join("")}</tbody></table></details>`
    : "";
  return `<table data-link-tiers><thead><tr><th>Tier</th><th>Devices</th><th>Links</th></tr></thead><tbody>${summary}</tbody></table>` +
    `<table>${head}<tbody>${first}</tbody></table>${more}`;
}

function feedsTable(feeds) {
  if (!feeds.length) return "<p class=\"meta\">No feeds.</p>";
  const rows = feeds
    .map(
      (f) =>
        `<tr><td>${escapeHtml(f.name)}</td><td>${escapeHtml(f.side)}</td><td>${escapeHtml(f.panel)}</td>` +
        `<td class="num">${f.capacity_kw.toFixed(1)} kW</td><td class="num">${f.racks} racks</td></tr>`,
    )
    .join("");
  return `<table><thead><tr><th>Feed</th><th>Side</th><th>Panel</th><th>Derated</th><th>Serves</th></tr></thead><tbody>${rows}</tbody></table>`;
}

/** Wire a floor plan's clicks to fetch `urlTemplate` (with "/0/" for the rack id) into `panel`. */
export function rackPanelOpener(panel, urlTemplate, extraFor = () => ({})) {
  panel.querySelector(".close")?.addEventListener("click", () => {
    panel.hidden = true;
  });
  let latest = 0;
  return async (rack, index) => {
    const ticket = ++latest;
    const response = await fetch(urlTemplate.replace("/0/", `/${rack.id}/`), { headers: { Accept: "application/json" } });
    if (!response.ok || ticket !== latest) return;
    renderRack(panel, await response.json(), extraFor(index));
  };
}
