"""Hardware catalog as plain frozen dataclasses, loaded from YAML.

The same YAML file seeds the Django catalog (``manage.py catalog import``) and feeds the pure
simulation core directly, so a benchmark or a unit test never needs a database. The Django
models mirror these fields one to one; ``topology.selectors.catalog_load`` builds the same
``Catalog`` from the database rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import yaml

DEFAULT_CATALOG_PATH = Path(__file__).resolve().parent.parent / "fixtures" / "catalog.yaml"

PRECISIONS = ("fp8", "bf16", "fp16", "tf32")
SWITCH_ROLES = ("leaf", "spine", "core", "scaleup")

#: The calibrated step-time constants a GPU entry's ``efficiency`` may set, each with its
#: closed range (the step-time model, ``scenarios.sim.step.efficiency``, reads exactly these
#: keys): the large-GEMM fraction of peak, the GEMM dimension at half of it, the achievable
#: fraction of HBM bandwidth, and FlashAttention-2's rate relative to a large GEMM.
EFFICIENCY_RANGES: dict[str, tuple[float, float]] = {
    "gemm_max": (0.01, 1.0),
    "gemm_half_dim": (1.0, 65536.0),
    "hbm_fraction": (0.01, 1.0),
    "flash2_fraction": (0.01, 1.5),
}

#: Annual failure rates are per unit-year (a GPU-, server-, NIC-, switch-, link- or feed-year);
#: above one failure per unit-year is a typo (a percentage typed as a fraction), not hardware.
ANNUAL_FAILURE_RATE_RANGE = (0.0, 1.0)


def efficiency_problems(efficiency: Any) -> dict[str, str]:
    """``{key: message}`` for each unknown or out-of-range key of a GPU's ``efficiency``."""
    if not isinstance(efficiency, Mapping):
        return {"efficiency": f"must be a mapping of {', '.join(EFFICIENCY_RANGES)} to numbers"}
    problems = {}
    for key, value in efficiency.items():
        if key not in EFFICIENCY_RANGES:
            problems[str(key)[:40]] = f"unknown key; the keys are {', '.join(EFFICIENCY_RANGES)}"
            continue
        low, high = EFFICIENCY_RANGES[key]
        number = not isinstance(value, bool) and isinstance(value, int | float)
        if not number or not low <= value <= high:
            got = f"{value:g}" if number else repr(value)[:40]
            problems[key] = f"must be a number from {low:g} to {high:g} (got {got})"
    return problems


class CatalogError(ValueError):
    """A catalog entry is unknown or malformed; the message names the field and the rule."""


@dataclass(frozen=True)
class GpuSpec:
    """One accelerator model: dense peak throughput, memory, power, scale-up bandwidth."""

    slug: str
    vendor: str
    name: str
    peak_tflops_fp8: float
    peak_tflops_bf16: float
    peak_tflops_tf32: float
    hbm_gib: float
    hbm_tbps: float
    tdp_w: float
    idle_w: float
    scaleup_gbytes_per_s: float
    annual_failure_rate: float  # per GPU-year, excluding HBM faults (counted below)
    hbm_annual_failure_rate: float  # per GPU-year: faults of the GPU's HBM stacks
    efficiency: Mapping[str, float] = field(default_factory=dict)
    sources: Mapping[str, str] = field(default_factory=dict)

    def peak_tflops(self, precision: str) -> float:
        """Dense peak TFLOP/s for a training precision (fp16 runs at the bf16 rate)."""
        if precision not in PRECISIONS:
            raise CatalogError(f"precision: must be one of {', '.join(PRECISIONS)} (got {precision!r})")
        key = "bf16" if precision == "fp16" else precision
        peak = getattr(self, f"peak_tflops_{key}")
        if peak <= 0:
            raise CatalogError(f"precision: {self.slug} has no {precision} tensor cores")
        return peak


@dataclass(frozen=True)
class ServerSpec:
    """One server (or compute tray) model: its GPUs, NICs, power and size."""

    slug: str
    name: str
    gpu: str
    gpus_per_server: int
    scaleup_domain_gpus: int
    nics_per_server: int
    nic_gbps: float
    base_power_w: float
    rack_units: int
    servers_per_rack: int
    annual_failure_rate: float  # per server-year: host faults (CPU, DRAM, SSD, board, chassis)
    nic_annual_failure_rate: float  # per scale-out NIC-year
    psu_annual_failure_rate: float  # per server-year: power-supply faults that stop the server
    sources: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SwitchSpec:
    """One network switch model (scale-out InfiniBand/Ethernet or scale-up NVLink)."""

    slug: str
    name: str
    roles: tuple[str, ...]
    radix: int
    port_gbps: float
    latency_ns: float
    power_w: float
    rack_units: int
    annual_failure_rate: float
    sources: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LinkSpec:
    """One cable or optic type (a link's two transceivers count as one link)."""

    slug: str
    name: str
    gbps: float
    latency_ns: float
    power_w: float
    annual_failure_rate: float
    sources: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class FeedSpec:
    """One power-feed type (a branch circuit from a panel to a rack PDU)."""

    slug: str
    name: str
    volts: float
    amps: float
    phases: int
    power_factor: float
    derating: float
    annual_failure_rate: float  # per feed-year: the circuit stops delivering power
    sources: Mapping[str, str] = field(default_factory=dict)

    @property
    def capacity_kw(self) -> float:
        """Continuous real power the feed may carry (:func:`feed_capacity_kw`)."""
        return float(feed_capacity_kw(self.volts, self.amps, self.phases, self.power_factor, self.derating))


def server_nameplate_w(*, base_power_w, gpus_per_server, tdp_w):
    """Nameplate power of a server (W): its base (CPUs, NICs, fans, scale-up switches) plus every
    GPU at TDP, elementwise over scalars or arrays. The one formula the catalog, the plans (rack
    budgets, floor plans, the power model) and the catalog rows use."""
    return base_power_w + gpus_per_server * tdp_w


def feed_capacity_kw(volts, amps, phases, power_factor, derating):
    """Continuous real power a feed may carry (kW), elementwise over scalars or arrays.

    ``V I pf derating`` for single phase, ``sqrt(3) V_LL I pf derating`` for three phases
    (balanced three-phase power with line-to-line volts); ``derating`` is the continuous-load
    factor (0.8: NEC 210.19(A)(1)/215.2(A)(1), loads over 3 h at 80 % of the breaker rating).
    """
    phase_factor = np.where(np.asarray(phases) == 3, np.sqrt(3.0), 1.0)
    return (
        np.asarray(volts, dtype=float)
        * np.asarray(amps, dtype=float)
        * phase_factor
        * np.asarray(power_factor, dtype=float)
        * np.asarray(derating, dtype=float)
        / 1000.0
    )


SPEC_TYPES = {
    "gpus": GpuSpec,
    "servers": ServerSpec,
    "switches": SwitchSpec,
    "links": LinkSpec,
    "feeds": FeedSpec,
}


@dataclass(frozen=True)
class Catalog:
    """All hardware specs by slug, with accessors that fail with a clear message."""

    gpus: Mapping[str, GpuSpec]
    servers: Mapping[str, ServerSpec]
    switches: Mapping[str, SwitchSpec]
    links: Mapping[str, LinkSpec]
    feeds: Mapping[str, FeedSpec]

    def _get(self, kind: str, slug: str) -> Any:
        table = getattr(self, kind)
        if slug not in table:
            known = ", ".join(sorted(table)) or "none"
            raise CatalogError(
                f"{kind[:-1] if kind != 'switches' else 'switch'}: unknown slug {slug!r} (known: {known})"
            )
        return table[slug]

    def gpu(self, slug: str) -> GpuSpec:
        return self._get("gpus", slug)

    def server(self, slug: str) -> ServerSpec:
        return self._get("servers", slug)

    def switch(self, slug: str) -> SwitchSpec:
        return self._get("switches", slug)

    def link(self, slug: str) -> LinkSpec:
        return self._get("links", slug)

    def feed(self, slug: str) -> FeedSpec:
        return self._get("feeds", slug)

    def server_power_w(self, slug: str) -> float:
        """Nameplate power of a server type (:func:`server_nameplate_w`)."""
        server = self.server(slug)
        return server_nameplate_w(
            base_power_w=server.base_power_w,
            gpus_per_server=server.gpus_per_server,
            tdp_w=self.gpu(server.gpu).tdp_w,
        )

    def switch_for_gbps(self, gbps: float, role: str = "leaf") -> SwitchSpec:
        """The default scale-out switch for a NIC speed: the slowest port speed that is fast enough."""
        candidates = [s for s in self.switches.values() if role in s.roles and s.port_gbps >= gbps]
        if not candidates:
            raise CatalogError(
                f"nic_gbps: no {role} switch in the catalog has ports of {gbps:g} Gb/s or more"
            )
        return min(candidates, key=lambda s: (s.port_gbps, -s.radix, s.slug))

    def link_for_gbps(self, gbps: float) -> LinkSpec:
        """The default optic for a link speed: the slowest one that is fast enough."""
        candidates = [spec for spec in self.links.values() if spec.gbps >= gbps]
        if not candidates:
            raise CatalogError(f"link gbps: no cable/optic in the catalog carries {gbps:g} Gb/s")
        return min(candidates, key=lambda spec: (spec.gbps, spec.slug))

    def to_dict(self) -> dict[str, list[dict[str, Any]]]:
        """The YAML-ready form (the inverse of ``catalog_from_dict``)."""
        return {kind: [spec_to_dict(spec) for spec in getattr(self, kind).values()] for kind in SPEC_TYPES}


def spec_to_dict(spec: Any) -> dict[str, Any]:
    """A spec as plain YAML-friendly values (tuples become lists, mappings dicts)."""
    out: dict[str, Any] = {}
    for f in fields(spec):
        value = getattr(spec, f.name)
        if isinstance(value, tuple):
            value = list(value)
        elif isinstance(value, Mapping):
            value = dict(value)
        out[f.name] = value
    return out


def spec_from_dict(kind: str, entry: Mapping[str, Any]) -> Any:
    """Build one spec from a YAML entry, naming the entry and field on any mistake."""
    spec_type = SPEC_TYPES[kind]
    names = {f.name for f in fields(spec_type)}
    slug = entry.get("slug", "?")
    unknown = set(entry) - names
    if unknown:
        raise CatalogError(f"{kind}[{slug}]: unknown field(s) {', '.join(sorted(unknown))}")
    values = dict(entry)
    for f in fields(spec_type):
        if f.name not in values:
            if f.name in ("sources", "efficiency"):
                continue
            raise CatalogError(f"{kind}[{slug}].{f.name}: required")
        if f.type in ("float", "int") and not isinstance(values[f.name], int | float):
            raise CatalogError(f"{kind}[{slug}].{f.name}: must be a number (got {values[f.name]!r})")
    if "roles" in values:
        values["roles"] = tuple(values["roles"])
        bad = set(values["roles"]) - set(SWITCH_ROLES)
        if bad:
            raise CatalogError(f"switches[{slug}].roles: must be among {', '.join(SWITCH_ROLES)}")
    return spec_type(**values)


def catalog_from_dict(data: Mapping[str, Any]) -> Catalog:
    """A ``Catalog`` from the parsed YAML document (keys ``gpus, servers, switches, links, feeds``)."""
    tables = {}
    for kind in SPEC_TYPES:
        entries = data.get(kind) or []
        tables[kind] = {e["slug"]: spec_from_dict(kind, e) for e in entries}
    catalog = Catalog(**tables)
    for server in catalog.servers.values():
        if server.gpu not in catalog.gpus:
            raise CatalogError(f"servers[{server.slug}].gpu: unknown GPU slug {server.gpu!r}")
    return catalog


def load_catalog(path: str | Path | None = None) -> Catalog:
    """Load the catalog YAML (the seed catalog shipped with the project by default)."""
    with open(path or DEFAULT_CATALOG_PATH, encoding="utf-8") as handle:
        return catalog_from_dict(yaml.safe_load(handle))
