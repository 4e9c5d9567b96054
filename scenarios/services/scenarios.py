"""Writes of scenarios: validate (with the pure core's rules), create, update, duplicate, and the
scenario file (YAML) in and out.

Scenario input is validated by the pure core (``scenarios.sim.scenario``) against the catalog in
the database; its errors become ``ValidationError({field path: message})`` where the field path
is the scenario file's dotted path (``"job.parallel.tp"``, ``"what_if.nic_gbps"``, ``"name"``) so
a form can show each message next to its field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml
from django.core.exceptions import ValidationError

from scenarios.models import Scenario
from twin.permissions import CHANGE, require, restrict

#: Keys of a Scenario's ``what_if`` JSON that the web app adds to the file format's ``what_if``.
WEB_WHAT_IF_KEYS = ("nodes",)
#: Cluster keys a generated design's parameters carry into a scenario file's ``cluster:``.
CLUSTER_KEYS = ("server", "nodes", "nic_gbps", "oversubscription", "su_nodes", "tiers", "switch")
#: What-if keys that ask for another cluster than the saved design (generated like it).
CLUSTER_WHAT_IFS = ("server", "nic_gbps", "oversubscription", "nodes")


def is_generated(design) -> bool:
    """Whether a design was built by a generator whose parameters can build it again."""
    from scenarios.sim.scenario import GENERATORS

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
    return scenario.cluster.nodes != design_cluster(design=design).get("nodes")


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
                message = f"what_if.slow_nodes: unknown node {entry[:40]!r} in design {design}"
                raise ValidationError({"what_if.slow_nodes": message})
            resolved.append(by_name[entry])
        else:
            resolved.append(int(entry) if isinstance(entry, str) else entry)
    return resolved


def scenario_dict(*, design, name: str, job: Any, what_if: Mapping[str, Any] | None) -> dict[str, Any]:
    """The scenario file dict (``version: 1``) of a design, a job and web what-if overrides.

    The web-only ``what_if.nodes`` becomes ``cluster.nodes``; node names in
    ``what_if.slow_nodes`` become indices.
    """
    from scenarios.sim.scenario import SCHEMA_VERSION

    cluster = design_cluster(design=design)
    overrides = dict(what_if or {})
    if overrides.get("nodes") is not None and overrides["nodes"] != cluster.get("nodes"):
        cluster["nodes"] = overrides["nodes"]
        for sized_for_the_design in ("tiers", "su_nodes", "switch"):
            cluster.pop(sized_for_the_design, None)
    file_what_if = {k: v for k, v in overrides.items() if k not in WEB_WHAT_IF_KEYS and v is not None}
    if "slow_nodes" in file_what_if:
        file_what_if["slow_nodes"] = _resolve_slow_nodes(design, file_what_if["slow_nodes"])
    out = {"version": SCHEMA_VERSION, "name": name, "cluster": cluster, "job": job}
    if file_what_if:
        out["what_if"] = file_what_if
    return out


def scenario_to_dict(*, scenario: Scenario) -> dict[str, Any]:
    """The scenario file dict of a saved scenario (what the core, the CLI and YAML export read)."""
    return scenario_dict(
        design=scenario.design, name=scenario.name, job=scenario.job, what_if=scenario.what_if
    )


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


def scenario_check(*, design, name: str, job: Any, what_if: Mapping[str, Any] | None, catalog=None):
    """Validate a design + job + overrides with the core's rules; return the core ``Scenario``.

    Raises
    ------
    ValidationError
        ``{field path: [message]}``, the path being the scenario file's (``job.parallel.tp``).
    """
    from scenarios.sim.scenario import ScenarioError, check_scenario, parse_scenario
    from topology.selectors import catalog_load

    what_if = dict(what_if or {})
    if not isinstance(name, str) or not name.strip():
        raise ValidationError({"name": "name: must be a non-empty name"})
    if len(name) > 120:
        raise ValidationError({"name": f"name: must be at most 120 characters (got {len(name):,})"})
    if what_if.get("nodes") is not None and (
        isinstance(what_if["nodes"], bool) or not isinstance(what_if["nodes"], int) or what_if["nodes"] < 1
    ):
        raise ValidationError(
            {"what_if.nodes": f"what_if.nodes: must be an integer ≥ 1 (got {str(what_if['nodes'])[:40]!r})"}
        )
    _check_cluster_what_ifs(design, what_if)
    data = scenario_dict(design=design, name=name, job=job, what_if=what_if)
    try:
        scenario = parse_scenario(data)
        check_scenario(scenario, catalog or catalog_load())
    except ScenarioError as exc:
        message = str(exc)
        raise ValidationError({_web_field(field_of(message), what_if): message}) from None
    return scenario


def scenario_create(
    *, design, name: str, job: Any, what_if: Mapping[str, Any] | None = None, user, description: str = ""
) -> Scenario:
    """Validate and save a scenario on a design the user may change.

    Raises
    ------
    NotFound, Forbidden
        The user may not see, or not change, the design (``twin.permissions``).
    ValidationError
        ``{field path: message}`` (see the module docstring).
    """
    require(design, user, CHANGE)
    scenario_check(design=design, name=name, job=job, what_if=what_if)
    scenario = Scenario(
        design=design,
        name=name.strip(),
        job=job,
        what_if=dict(what_if or {}),
        created_by=user,
        description=description,
    )
    scenario.full_clean()
    scenario.save()
    return scenario


def scenario_update(
    *,
    scenario: Scenario,
    user,
    name: str | None = None,
    job: Any = None,
    what_if: Mapping[str, Any] | None = None,
    description: str | None = None,
) -> Scenario:
    """Change a scenario's name, job, overrides or description (``None`` keeps a value) and
    re-validate. Existing runs keep the results they computed."""
    require(scenario, user, CHANGE)
    new_name = scenario.name if name is None else name
    new_job = scenario.job if job is None else job
    new_what_if = scenario.what_if if what_if is None else dict(what_if)
    scenario_check(design=scenario.design, name=new_name, job=new_job, what_if=new_what_if)
    scenario.name, scenario.job, scenario.what_if = new_name.strip(), new_job, new_what_if
    if description is not None:
        scenario.description = description
    scenario.full_clean()
    scenario.save()
    return scenario


def scenario_duplicate(
    *, scenario: Scenario, user, name: str | None = None, what_if: Mapping[str, Any] | None = None
) -> Scenario:
    """Copy a scenario as a what-if (default name "<name> (what-if)", or "... 2", "... 3")."""
    require(scenario, user, CHANGE)
    if name is None:
        base = f"{scenario.name} (what-if)"
        taken = set(Scenario.objects.filter(design=scenario.design).values_list("name", flat=True))
        name, n = base, 2
        while name in taken:
            name, n = f"{base} {n}", n + 1
    return scenario_create(
        design=scenario.design,
        name=name,
        job=scenario.job,
        what_if=scenario.what_if if what_if is None else what_if,
        user=user,
        description=scenario.description,
    )


def scenario_to_yaml(*, scenario: Scenario) -> str:
    """The scenario as a version-1 scenario file (``manage.py simulate`` runs it as is)."""
    data = scenario_to_dict(scenario=scenario)
    header = f"# Cluster Twin scenario exported from design {scenario.design.name!r}\n"
    return header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def scenario_from_yaml(*, text: str, design=None, user) -> Scenario:
    """Import a scenario file.

    With ``design`` the file's job and what-if are saved on that design (its ``cluster:`` is
    replaced by the design's; a different ``cluster.nodes`` is kept as the ``nodes`` override).
    Without, the file's cluster is generated and saved as a new design of the first team in
    which the user may change designs, then the scenario is saved on it.

    Raises
    ------
    ValidationError
        ``{"yaml": ...}`` for unreadable text, else field paths as ``scenario_create``.
    """
    from scenarios.sim.scenario import ScenarioError, parse_scenario

    if design is not None:
        require(design, user, CHANGE)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValidationError({"yaml": f"yaml: not valid YAML ({exc.__class__.__name__})"}) from None
    if isinstance(data, Mapping) and isinstance(data.get("scenarios"), list) and data["scenarios"]:
        data = data["scenarios"][0]
    try:
        parsed = parse_scenario(data)
    except ScenarioError as exc:
        raise ValidationError({field_of(str(exc)): str(exc)}) from None
    what_if = dict(data.get("what_if") or {})
    if design is None:
        design = _design_for_cluster(parsed, user)
    else:
        cluster_nodes = (data.get("cluster") or {}).get("nodes")
        if cluster_nodes is not None and cluster_nodes != design_cluster(design=design).get("nodes"):
            what_if["nodes"] = cluster_nodes
    return scenario_create(
        design=design,
        name=parsed.name,
        job=data["job"],
        what_if=what_if,
        user=user,
        description=str(data.get("description") or ""),
    )


def _design_for_cluster(parsed, user):
    from scenarios.sim.scenario import ScenarioError
    from scenarios.sim.step_time import cluster_plan
    from topology.models import Design, Team
    from topology.selectors import catalog_load
    from topology.services import design_create_from_plan

    team = restrict(Team.objects, user, CHANGE).order_by("pk").first()
    if team is None:
        raise ValidationError({"design": "design: choose a design (you belong to no team to create one in)"})
    try:
        plan = cluster_plan(parsed.cluster, catalog_load())
    except ScenarioError as exc:
        raise ValidationError({"cluster": str(exc)}) from None
    name, n = f"{parsed.name} cluster", 2
    while Design.objects.filter(team=team, name=name).exists():
        name, n = f"{parsed.name} cluster {n}", n + 1
    return design_create_from_plan(plan=plan, name=name, team=team, user=user)
