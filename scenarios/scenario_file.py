"""The scenario file of a saved scenario: built from its design's rows and its JSON, and
validated with the pure core's rules against the catalog in the database.

This is the one door between saved scenarios and the scenario format (``docs/scenario-format.md``):
services save what it admits, run kinds compute what it returns, the YAML export writes it.
Errors become ``ValidationError({field path: message})`` where the field path is the scenario
file's dotted path (``"job.parallel.tp"``, ``"what_if.nic_gbps"``, ``"name"``), so a form shows
each message next to its field.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError

from scenarios.sim.format.schema import CLUSTER_WHAT_IFS, GENERATORS, SCHEMA_VERSION, TOP
from utilities.errors import preview

#: The sections of the scenario file a saved scenario keeps, each a JSON field of ``Scenario``:
#: the file's mappings (``scenarios.sim.format.schema.TOP``) but ``cluster`` (the design is the
#: cluster) and ``measured`` (calibration files only; the core ignores it). The scenario form,
#: the API's bodies and the file all read this one list, so a new section reaches every door.
SECTIONS: tuple[str, ...] = tuple(key for key in TOP.mappings if key not in ("cluster", "measured"))

#: Cluster keys a generated design's parameters carry into a scenario file's ``cluster:``.
CLUSTER_KEYS = ("server", "nodes", "nic_gbps", "oversubscription", "su_nodes", "tiers", "switch")


def is_generated(design) -> bool:
    """Whether a design was built by a generator whose parameters can build it again."""
    params = design.parameters or {}
    return design.generator in GENERATORS and bool(params.get("server")) and bool(params.get("nodes"))


def design_cluster(*, design) -> dict[str, Any]:
    """The scenario file's ``cluster:`` mapping of a design.

    Generated designs give their generator and parameters; a hand-built design gives its server
    type and node count (the run then simulates the saved design itself).
    """
    from topology.models import Node

    if is_generated(design):
        params = design.parameters
        cluster = {"generator": design.generator}
        cluster.update({k: params[k] for k in CLUSTER_KEYS if params.get(k) is not None})
        return cluster
    nodes = Node.objects.filter(rack__hall__design=design)
    server = nodes.values_list("server_type__slug", flat=True).first()
    return {"generator": "fat-tree", "server": server or "", "nodes": nodes.count()}


def what_if_changes_cluster(scenario, design) -> bool:
    """Whether a core scenario's what-if asks for a cluster other than the saved design."""
    w = scenario.what_if
    if w.server or w.nic_gbps is not None or w.oversubscription is not None:
        return True
    return w.nodes is not None and w.nodes != scenario.cluster.nodes


def _node_index_by_name(design) -> dict[str, int]:
    from topology.models import Node

    names = Node.objects.filter(rack__hall__design=design).order_by("pk").values_list("name", flat=True)
    return {name: i for i, name in enumerate(names)}


def _resolve_slow_nodes(design, slow_nodes: Any) -> Any:
    """Node names in ``what_if.slow_nodes`` -> node indices (ints pass through)."""
    if not isinstance(slow_nodes, list | tuple) or all(isinstance(n, int) for n in slow_nodes):
        return slow_nodes
    by_name = _node_index_by_name(design)
    resolved = []
    for entry in slow_nodes:
        if isinstance(entry, str) and not entry.isdigit():
            if entry not in by_name:
                message = f"what_if.slow_nodes: unknown node {preview(entry)} in design {design}"
                raise ValidationError({"what_if.slow_nodes": message})
            resolved.append(by_name[entry])
        else:
            resolved.append(int(entry) if isinstance(entry, str) else entry)
    return resolved


def scenario_dict(
    *,
    design,
    name: str,
    job: Any,
    what_if: Mapping[str, Any] | None,
    failures: Mapping[str, Any] | None = None,
    power: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The scenario file dict (``version: 1``) of a design, a job, what-if overrides and the
    failure and power settings (node names in ``what_if.slow_nodes`` become indices; empty
    sections are left out)."""
    file_what_if = {k: v for k, v in (what_if or {}).items() if v is not None}
    if "slow_nodes" in file_what_if:
        file_what_if["slow_nodes"] = _resolve_slow_nodes(design, file_what_if["slow_nodes"])
    out = {"version": SCHEMA_VERSION, "name": name, "cluster": design_cluster(design=design), "job": job}
    for key, section in (("what_if", file_what_if), ("failures", failures), ("power", power)):
        if section:
            out[key] = dict(section)
    return out


def sections_of(scenario) -> dict[str, Any]:
    """``{section: its JSON}`` of a saved scenario, for every one of ``SECTIONS``."""
    return {key: getattr(scenario, key) for key in SECTIONS}


def scenario_to_dict(*, scenario) -> dict[str, Any]:
    """The scenario file dict of a saved scenario (what the core, the CLI and YAML export read)."""
    return scenario_dict(design=scenario.design, name=scenario.name, **sections_of(scenario))


def field_of(message: str) -> str:
    """The dotted field path a ScenarioError message starts with (``"job.parallel.tp: ..."``)."""
    head, sep, _ = message.partition(":")
    if sep and head and " " not in head:
        return head
    return "__all__"


def _web_field(field: str, what_if: Mapping[str, Any]) -> str:
    # Cluster errors come from the web what-if overrides (the design itself is valid).
    if field == "cluster.nodes" and what_if.get("nodes") is not None:
        return "what_if.nodes"
    if field == "cluster.server" and what_if.get("server"):
        return "what_if.server"
    return field


def _check_cluster_what_ifs(design, what_if: Mapping[str, Any]) -> None:
    """A hand-built design has no generator to build another cluster from: say so at once."""
    if is_generated(design):
        return
    asked = [k for k in CLUSTER_WHAT_IFS if what_if.get(k) not in (None, "")]
    if asked:
        key = f"what_if.{asked[0]}"
        raise ValidationError(
            {
                key: f"{key}: the design {design.name!r} was built by hand, so the twin cannot build "
                "another cluster like it (server, NIC speed, oversubscription and node count what-ifs "
                "need a generated design)"
            }
        )


def scenario_check(
    *,
    design,
    name: str,
    job: Any,
    what_if: Mapping[str, Any] | None,
    failures: Mapping[str, Any] | None = None,
    power: Mapping[str, Any] | None = None,
    catalog=None,
):
    """Validate a design + job + overrides with the core's rules; return the core ``Scenario``.

    Raises
    ------
    ValidationError
        ``{field path: [message]}``, the path being the scenario file's (``job.parallel.tp``).
    """
    fields = {"name": name, "job": job, "what_if": what_if, "failures": failures, "power": power}
    return _checked(design, fields, catalog).scenario


def _checked(design, fields: Mapping[str, Any], catalog):
    """The core ``CheckedScenario`` of a design and the scenario file's sections (``ValidationError``
    naming the field when the core's rules refuse it)."""
    from scenarios.sim.format.scenario import ScenarioError, check_scenario, parse_scenario
    from topology.selectors import catalog_load

    name = fields["name"]
    what_if = dict(fields["what_if"] or {})
    if not isinstance(name, str) or not name.strip():
        raise ValidationError({"name": "name: must be a non-empty name"})
    try:
        TOP.field("name").read({"name": name}, "")  # the file's limit, before anything else
    except ScenarioError as exc:
        raise ValidationError({"name": str(exc)}) from None
    _check_cluster_what_ifs(design, what_if)
    data = scenario_dict(design=design, **{**fields, "what_if": what_if})
    try:
        return check_scenario(parse_scenario(data), catalog or catalog_load())
    except ScenarioError as exc:
        message = str(exc)
        raise ValidationError({_web_field(field_of(message), what_if): message}) from None


def saved_scenario_check(scenario, *, catalog=None):
    """``scenario_check`` of a saved scenario (every section as saved): its core ``Scenario``."""
    return saved_scenario_checked(scenario, catalog=catalog).scenario


def saved_scenario_checked(scenario, *, catalog=None):
    """The core ``CheckedScenario`` of a saved scenario (every section as saved), validated
    against ``catalog`` (today's when omitted): what a run's computation starts from."""
    return _checked(scenario.design, {"name": scenario.name, **sections_of(scenario)}, catalog)


def document_checked(document: Mapping[str, Any], *, catalog):
    """The core ``CheckedScenario`` of a stored scenario document (a run's inputs, as it ran),
    validated against ``catalog`` (the run's snapshot): ``ValidationError`` naming the field."""
    from scenarios.sim.format.scenario import ScenarioError, check_scenario, parse_scenario

    try:
        return check_scenario(parse_scenario(dict(document)), catalog)
    except ScenarioError as exc:
        message = str(exc)
        raise ValidationError({field_of(message): message}) from None


def scenario_revision(scenario) -> str:
    """A short digest of a saved scenario as a page shows it (name, description and every section
    of ``SECTIONS``): the scenario page posts the one it showed, and a run or a save goes ahead
    only if it is still the saved one (a save that changes nothing keeps it)."""
    shown = {"name": scenario.name, "description": scenario.description, **sections_of(scenario)}
    text = json.dumps(shown, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
