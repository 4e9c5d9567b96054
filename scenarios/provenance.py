"""What a run simulated, kept with it (a run keeps its inputs): the scenario document as the core
read it, the design version, and the catalog rows it used (a compact snapshot and its digest).

``RunInputs`` is the one shape of ``Run.inputs``; a run's computation, its page, its label, its
compare column and a re-run "as it ran" read it, never today's scenario or catalog. Runs from
before provenance was kept have no inputs (``RunInputs.of`` is None): pages say so.

The document is what the core read (``scenario_file.scenario_dict``) with the model preset and
every default written out (``document_of``): each section's declared defaults (the schema's
``Section.read``) and the job's keys ``job.framework`` decides, as the core resolved them, so a
later change of a default or a preset cannot change what an old run says it ran. It is kept
only if the core reads it exactly as the original (else the original is kept, presets expanded).

``document_settings`` reads a document back setting by setting, with what a blank setting is on
the design or by default: what the compare page lines up.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from scenarios.sim.format.presets import apply_preset

#: What pages and the API say of a run from before provenance was kept.
NOT_RECORDED = "inputs not recorded: run before provenance was kept"
RERUN_WITHOUT_INPUTS = (
    "inputs: not recorded (it ran before provenance was kept), so it cannot run again as it ran"
)
#: Catalog kinds a run's cluster may pick from by speed or capacity (the generators choose the
#: switch, optic and feed types among all of them), so the snapshot keeps every row of these.
WHOLE_KINDS = ("switches", "links", "feeds")
#: Spec fields that document a figure but never enter a computation (left out of the snapshot).
NOT_SIMULATED = ("sources",)


#: Job keys whose blank value ``job.framework`` fills (``scenario._apply_framework``).
FRAMEWORK_KEYS = ("framework", "precision", "overlap_dp", "overlap_tp", "overlap_pp", "attention")


def _expanded_sections():
    from scenarios.sim.format import failures, power, schema

    return (
        schema.CLUSTER,
        schema.MODEL,
        schema.MOE,
        schema.JOB,
        schema.PARALLEL,
        schema.WHAT_IF,
        failures.FAILURES,
        failures.CHECKPOINT,
        failures.RATES,
        failures.LEMONS,
        power.POWER,
        power.POWER_GPU,
        power.POWER_STORAGE,
    )


def _mapping_at(document: dict[str, Any], path: str) -> dict[str, Any] | None:
    data: Any = document
    for key in path.split("."):
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else None


def _write_defaults(document: dict[str, Any], parsed) -> None:
    """Write every section's declared default, and the framework's choices, into ``document``
    (a section its parser reads specially, e.g. ``interval_min: optimal``, stays as given)."""
    from scenarios.sim.format.errors import ScenarioError

    for section in _expanded_sections():
        data = _mapping_at(document, section.path)
        if data is None:
            continue
        try:
            values = section.read(data)
        except ScenarioError:
            continue
        for field_ in section.fields:
            value = values[field_.key]
            if data.get(field_.key) is None and value is not None and value != ():
                data[field_.key] = list(value) if isinstance(value, tuple) else value
    for key in FRAMEWORK_KEYS:
        document["job"][key] = getattr(parsed.job, key)


def document_of(data: dict[str, Any]) -> dict[str, Any]:
    """The scenario document as the core reads it: ``data`` (a scenario file dict) with its model
    preset (``presets.apply_preset``, what the parser does) and every default written out, when
    the core reads the written-out document exactly as ``data`` (see the module doc)."""
    from scenarios.sim.format.errors import ScenarioError
    from scenarios.sim.format.scenario import parse_scenario

    document = copy.deepcopy(data)
    job = document.get("job")
    if isinstance(job, dict) and isinstance(job.get("model"), dict):
        job["model"] = apply_preset(job["model"])
    try:
        parsed = parse_scenario(document)
        expanded = copy.deepcopy(document)
        expanded.setdefault("what_if", {})
        _write_defaults(expanded, parsed)
        if parse_scenario(expanded) == parsed:
            return expanded
    except (ScenarioError, TypeError, ValueError, KeyError):
        pass
    return document


def used_slugs(document: dict[str, Any], catalog) -> dict[str, set[str]]:
    """The servers and GPUs a document's run can touch: the cluster's server, the what-if's
    server and GPU, and each server's GPU."""
    cluster = document.get("cluster") or {}
    what_if = document.get("what_if") or {}
    servers = {s for s in (cluster.get("server"), what_if.get("server")) if s}
    gpus = {g for g in (what_if.get("gpu"),) if g}
    gpus |= {catalog.servers[s].gpu for s in servers if s in catalog.servers}
    return {"servers": servers, "gpus": gpus}


def catalog_snapshot(catalog, document: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The catalog rows a document's run uses, in the catalog file's shape without sources:
    its servers and GPUs, and every switch, optic and feed type (see ``WHOLE_KINDS``)."""
    used = used_slugs(document, catalog)
    rows = catalog.to_dict()
    snapshot = {}
    for kind, entries in rows.items():
        keep = [e for e in entries if kind in WHOLE_KINDS or e["slug"] in used.get(kind, ())]
        snapshot[kind] = [
            {k: v for k, v in e.items() if k not in NOT_SIMULATED}
            for e in sorted(keep, key=lambda e: e["slug"])
        ]
    return snapshot


def digest_of(value: Any) -> str:
    """sha256 of the canonical JSON of ``value`` (sorted keys, no spaces), hex."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class RunInputs:
    """Everything a run simulated (``Run.inputs``)."""

    scenario: dict[str, Any]
    design_version: int
    catalog: dict[str, list[dict[str, Any]]] = field(repr=False)
    catalog_digest: str
    #: The run whose inputs a re-run "as it ran" copied (None for a run of today's inputs).
    rerun_of: int | None = None

    @classmethod
    def of(cls, run) -> RunInputs | None:
        """The inputs stored with a run, or None (a run from before provenance was kept)."""
        data = getattr(run, "inputs", None) or {}
        if not data.get("scenario") or "catalog" not in data:
            return None
        return cls(
            scenario=data["scenario"],
            design_version=int(data.get("design_version") or 0),
            catalog=data["catalog"],
            catalog_digest=data.get("catalog_digest") or digest_of(data["catalog"]),
            rerun_of=data.get("rerun_of"),
        )

    @classmethod
    def build(cls, document: dict[str, Any], *, design_version: int, catalog) -> RunInputs:
        """The inputs of a run of ``document`` on today's ``catalog`` (a core ``Catalog``)."""
        document = document_of(document)
        snapshot = catalog_snapshot(catalog, document)
        return cls(document, int(design_version), snapshot, digest_of(snapshot))

    def to_json(self) -> dict[str, Any]:
        out = {
            "scenario": self.scenario,
            "design_version": self.design_version,
            "catalog": self.catalog,
            "catalog_digest": self.catalog_digest,
        }
        if self.rerun_of is not None:
            out["rerun_of"] = self.rerun_of
        return out

    def api(self) -> dict[str, Any]:
        """What ``GET /api/runs/{id}/`` carries (the snapshot itself stays in the database)."""
        return {
            "scenario": self.scenario,
            "design_version": self.design_version,
            "catalog_digest": self.catalog_digest,
            "rerun_of": self.rerun_of,
        }

    @property
    def name(self) -> str:
        return str(self.scenario.get("name") or "")

    def core_catalog(self, today=None):
        """The core ``Catalog`` the run computes with: ``today``'s when its rows the run uses are
        the snapshot's (one compiled fabric shared with the design page), else the snapshot's."""
        from topology.fabric.specs import catalog_from_dict

        if today is not None and digest_of(catalog_snapshot(today, self.scenario)) == self.catalog_digest:
            return today
        return catalog_from_dict(self.catalog)

    def with_design_version(self, version: int) -> RunInputs:
        return RunInputs(self.scenario, int(version), self.catalog, self.catalog_digest, self.rerun_of)

    def rerun(self, run_id: int) -> RunInputs:
        return RunInputs(self.scenario, self.design_version, self.catalog, self.catalog_digest, run_id)


def flat(prefix: str, data: Any) -> dict[str, Any]:
    """A nested mapping as ``{"a.b.c": value}`` (lists stay values)."""
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for key, value in data.items():
            out.update(flat(f"{prefix}.{key}" if prefix else str(key), value))
        return out
    return {prefix: data}


@dataclass(frozen=True)
class SettingChange:
    """One setting of a scenario document that differs between two documents."""

    path: str
    before: Any
    after: Any


def document_changes(before: dict[str, Any], after: dict[str, Any]) -> list[SettingChange]:
    """The settings (dotted paths) whose values differ between two scenario documents."""
    a, b = flat("", before), flat("", after)
    return [
        SettingChange(path, a.get(path), b.get(path))
        for path in sorted(set(a) | set(b))
        if path != "version" and a.get(path) != b.get(path)
    ]


# --- what a run ran with, setting by setting ------------------------------------------------


@dataclass(frozen=True)
class Setting:
    """One setting a run ran with: its value and where it came from (``""`` the scenario says
    so, ``"design"`` the scenario leaves it to the design, ``"default"`` the format's default)."""

    value: Any
    source: str = ""


def _design_fills(document: dict[str, Any], server: Any) -> dict[str, Any]:
    """What a setting the scenario leaves blank is on its design (its ``cluster:`` and server)."""
    cluster = document.get("cluster") or {}
    what_if = document.get("what_if") or {}
    nic = cluster.get("nic_gbps") or (server.get("nic_gbps") if server else None)
    nodes = what_if.get("nodes") or cluster.get("nodes")
    return {
        "cluster.nic_gbps": nic,
        "what_if.server": cluster.get("server"),
        "what_if.gpu": server.get("gpu") if server else None,
        "what_if.nodes": cluster.get("nodes"),
        "what_if.nic_gbps": nic,
        "what_if.oversubscription": cluster.get("oversubscription") or 1.0,
        "job.nodes": nodes,
    }


def _resolved(document: dict[str, Any]) -> tuple[Any, Any]:
    """The core's reading of the document's job (the framework's choices filled in) and failures
    section (None when the document does not parse)."""
    from scenarios.sim.format.errors import ScenarioError
    from scenarios.sim.format.failures import parse_failures
    from scenarios.sim.format.scenario import parse_scenario

    try:
        parsed = parse_scenario(document)
        return parsed.job, parsed.failures or parse_failures(None)
    except (ScenarioError, TypeError, ValueError):
        return None, None


def document_settings(
    document: dict[str, Any], *, server: dict[str, Any] | None = None
) -> dict[str, Setting]:
    """Every setting of a scenario document by path, as the run used it: the document's value,
    else the design's (``server`` is its catalog row) or the format's default, so two runs
    differing in a setting show a row whichever of them named it."""
    from scenarios.forms import FORM_SECTIONS, OPTIONAL_SECTIONS
    from scenarios.sim.format.errors import ScenarioError
    from scenarios.sim.format.schema import CLUSTER

    fills = _design_fills(document, server)
    job, failures = _resolved(document)
    out: dict[str, Setting] = {}
    for section in (CLUSTER, *FORM_SECTIONS):
        data = _mapping_at(document, section.path)
        if section.path in OPTIONAL_SECTIONS and not data:
            continue
        try:
            defaults = section.read(data or {})
        except ScenarioError:
            defaults = {}
        for field_ in section.fields:
            path = f"{section.path}.{field_.key}"
            given = (data or {}).get(field_.key)
            if given is not None:
                out[path] = Setting(given)
            elif fills.get(path) is not None:
                out[path] = Setting(fills[path], "design")
            elif field_.web:
                servers = fills["job.nodes"]
                out[path] = Setting(_default(path, field_.key, defaults, job, failures, servers), "default")
    for path, value in flat("", document).items():
        if path not in out and path.split(".", 1)[0] in ("job", "what_if", "failures", "power"):
            out[path] = Setting(value)
    return out


def _default(path: str, key: str, defaults: dict[str, Any], job: Any, failures: Any, servers: Any) -> Any:
    """A setting the document leaves blank, as the core reads it: the framework's choice for the
    job, the spares held back for the job's servers, else the section's declared default."""
    if path == "failures.spare_servers" and failures is not None:
        job_servers = job.nodes if job is not None and job.nodes else servers
        return failures.spares(job_servers) if job_servers else defaults.get(key)
    if path.startswith("job.") and path.count(".") == 1 and job is not None and hasattr(job, key):
        return getattr(job, key)  # the framework's choice, as the core read it
    return defaults.get(key)
