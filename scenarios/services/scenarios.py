"""Writes of scenarios: create, update, duplicate, and the scenario file (YAML) in and out.
Every write is validated by ``scenarios.scenario_file.scenario_check`` first."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml
from django.core.exceptions import ValidationError

from scenarios.models import Scenario
from scenarios.scenario_file import design_cluster, field_of, scenario_check, scenario_to_dict
from teams.permissions import CHANGE, require, restrict
from utilities.errors import clip_message


def scenario_create(
    *,
    design,
    name: str,
    job: Any,
    what_if: Mapping[str, Any] | None = None,
    failures: Mapping[str, Any] | None = None,
    power: Mapping[str, Any] | None = None,
    user,
    description: str = "",
) -> Scenario:
    """Validate and save a scenario on a design the user may change.

    Raises
    ------
    NotFound, Forbidden
        The user may not see, or not change, the design (``teams.permissions``).
    ValidationError
        ``{field path: message}`` (see the module docstring).
    """
    require(design, user, CHANGE)
    scenario_check(design=design, name=name, job=job, what_if=what_if, failures=failures, power=power)
    scenario = Scenario(
        design=design,
        name=name.strip(),
        job=job,
        what_if=dict(what_if or {}),
        failures=dict(failures or {}),
        power=dict(power or {}),
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
    failures: Mapping[str, Any] | None = None,
    power: Mapping[str, Any] | None = None,
    description: str | None = None,
) -> Scenario:
    """Change a scenario's name, job, overrides, failure or power settings or description
    (``None`` keeps a value) and re-validate. Existing runs keep the results they computed."""
    require(scenario, user, CHANGE)
    new_name = scenario.name if name is None else name
    new_job = scenario.job if job is None else job
    new_what_if = scenario.what_if if what_if is None else dict(what_if)
    new_failures = scenario.failures if failures is None else dict(failures)
    new_power = scenario.power if power is None else dict(power)
    scenario_check(
        design=scenario.design,
        name=new_name,
        job=new_job,
        what_if=new_what_if,
        failures=new_failures,
        power=new_power,
    )
    scenario.name, scenario.job, scenario.what_if = new_name.strip(), new_job, new_what_if
    scenario.failures, scenario.power = new_failures, new_power
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
        failures=scenario.failures,
        power=scenario.power,
        user=user,
        description=scenario.description,
    )


def scenario_to_yaml(*, scenario: Scenario) -> str:
    """The scenario as a version-1 scenario file (``manage.py simulate`` runs it as is)."""
    data = scenario_to_dict(scenario=scenario)
    return document_to_yaml(
        data, header=f"Cluster Twin scenario exported from design {scenario.design.name!r}"
    )


def document_to_yaml(document: Mapping[str, Any], *, header: str) -> str:
    """A scenario document as a version-1 scenario file under a ``# header`` comment line (a
    saved scenario's export, a run's scenario as it ran)."""
    return f"# {header}\n" + yaml.safe_dump(dict(document), sort_keys=False, allow_unicode=True)


def scenario_from_yaml(*, text: str | bytes, design=None, user) -> Scenario:
    """Import a scenario file (text, or the bytes of an upload).

    The file goes through the bounded loader every door uses (``utilities.yamlsafe``: size,
    depth, aliases, duplicate keys, numbers and encoding checked while parsing, so one hostile
    file can neither stall the server nor echo megabytes back). With ``design`` the file's job and
    what-if are saved on that design (its ``cluster:`` is replaced by the design's; a different
    ``cluster.nodes`` is kept as the ``nodes`` override). Without, the file's cluster is generated
    and saved as a new design of the first team in which the user may change designs.

    Raises
    ------
    ValidationError
        The field path of the first problem (``yaml`` for the file itself), as ``scenario_create``.
    """
    from scenarios.sim.format.scenario import ScenarioError, parse_scenario
    from utilities.errors import InputError
    from utilities.yamlsafe import load_yaml

    if design is not None:
        require(design, user, CHANGE)
    try:
        data = load_yaml(text, source="yaml")
        if isinstance(data, Mapping) and "scenarios" in data:
            entries = data["scenarios"]
            if not isinstance(entries, list) or not entries:
                raise ScenarioError("scenarios: must be a non-empty list of scenarios")
            data = entries[0]
        if data is None:
            raise ScenarioError("yaml: the file holds no scenario (it is empty or only comments)")
        parsed = parse_scenario(data)
    except InputError as exc:  # the loader's refusal or the format's (ScenarioError is one)
        message = clip_message(str(exc))
        raise ValidationError({field_of(message): message}) from None
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
        failures=data.get("failures"),
        power=data.get("power"),
        user=user,
        description=str(data.get("description") or ""),
    )


def _design_for_cluster(parsed, user):
    from scenarios.sim.format.scenario import ScenarioError
    from scenarios.sim.step.model import cluster_plan
    from teams.models import Team
    from topology.selectors import catalog_load, design_free_name
    from topology.services import design_create_from_plan

    team = restrict(Team.objects, user, CHANGE).order_by("pk").first()
    if team is None:
        raise ValidationError({"design": "design: choose a design (you belong to no team to create one in)"})
    try:
        plan = cluster_plan(parsed.cluster, catalog_load())
    except ScenarioError as exc:
        raise ValidationError({"cluster": str(exc)}) from None
    name = design_free_name(team=team, base=f"{parsed.name} cluster")
    return design_create_from_plan(plan=plan, name=name, team=team, user=user)


def scenario_delete(*, scenario: Scenario, user) -> None:
    """Delete a scenario with its runs; runs still queued or running are cancelled first."""
    from scenarios.services.runs import run_cancel

    require(scenario, user, CHANGE)
    for run in scenario.runs.active():
        run_cancel(run=run, user=user)
    scenario.delete()
