"""A design with its scenarios as one YAML file, out and back in.

The file holds ``version``, ``name``, ``description``, ``cluster`` (a scenario file's
``cluster:`` section, with the design's generator) and a ``scenarios:`` list in the scenario
format, each with the design's
``cluster:`` (``docs/scenario-format.md``), so ``manage.py simulate <file>`` runs every scenario
as it is and the web app imports it back as a new design with the same rows and scenarios::

    version: 1
    name: H100 x4
    description: ""
    cluster: {generator: rail-optimized, server: dgx-h100, nodes: 4, ...}
    scenarios:
    - {version: 1, name: baseline, cluster: {...}, job: {...}, what_if: {...}}

Text is read through the bounded loader (``utilities.yamlsafe.load_yaml``); every error names
the field path and the line of the file it is on.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml
from django.core.exceptions import ValidationError
from django.db import transaction

from scenarios.models import Scenario
from scenarios.scenario_file import CLUSTER_KEYS, design_cluster, field_of, is_generated, scenario_to_dict
from teams.permissions import CHANGE, VIEW, require
from utilities.errors import clip_message, preview

SCHEMA_VERSION = 1
TOP_KEYS = ("version", "name", "description", "cluster", "scenarios")
#: Edits the file cannot carry (its ``cluster:`` rebuilds the generated design).
_EDIT_ACTIONS = ("changed", "added", "removed")


def design_export_yaml(*, design, user) -> str:
    """The design and every scenario on it as one file (``manage.py simulate`` runs it as is).

    Raises
    ------
    NotFound (``teams.permissions``); ValidationError ``{"generator": ...}`` for a design built
    or edited by hand (no generator builds it again, so no ``cluster:`` describes it).
    """
    from topology.models import DesignChange

    require(design, user, VIEW)
    if not is_generated(design):
        raise ValidationError(
            {
                "generator": f"generator: design {design.name!r} was built or edited by hand (racks added "
                "or removed), so no generator builds it again and no cluster: describes it; fork "
                "it to keep a copy"
            }
        )
    scenarios = Scenario.objects.filter(design=design).select_related("design").order_by("name", "pk")
    data = {
        "version": SCHEMA_VERSION,
        "name": design.name,
        "description": design.description,
        "cluster": design_cluster(design=design),
        "scenarios": [_entry(s) for s in scenarios],
    }
    edits = DesignChange.objects.filter(design=design, action__in=_EDIT_ACTIONS).exclude(object_kind="design")
    header = (
        "# Cluster Twin design file: the design's cluster and its scenarios (manage.py simulate runs it).\n"
    )
    if edits.exists():
        header += (
            f"# Note: {edits.count()} edit(s) of racks or feeds since the design was generated are not in "
            "this file; importing it rebuilds the generated design.\n"
        )
    return header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def _entry(scenario: Scenario) -> dict[str, Any]:
    entry = scenario_to_dict(scenario=scenario)
    if scenario.description:
        entry["description"] = scenario.description  # the format accepts it (and the core ignores it)
    return entry


def _path_tokens(path: str) -> list[str | int]:
    return [int(t[1:-1]) if t.startswith("[") else t for t in re.findall(r"\[\d+\]|[^.\[\]]+", path)]


def line_of(text: str, path: str) -> int | None:
    """The line of ``path`` (``scenarios[1].job.parallel.tp``) in YAML ``text``, or of its
    nearest parent that is there; None when not even the first key is (the text already passed
    the bounded loader, so composing it again is cheap and safe)."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    line = None
    for token in _path_tokens(path):
        if isinstance(node, yaml.MappingNode) and isinstance(token, str):
            match = next(((k, v) for k, v in node.value if k.value == token), None)
            if match is None:
                break
            line, node = match[0].start_mark.line + 1, match[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(token, int) and token < len(node.value):
            node = node.value[token]
            line = node.start_mark.line + 1
        else:
            break
    return line


def _located(text: str, path: str, message: str) -> ValidationError:
    """``{path: "path: problem (line N)"}``, the line found in the original text."""
    if not message.startswith(f"{path}:"):
        message = f"{path}: {message}"
    line = line_of(text, path) if "(line " not in message else None
    return ValidationError({path: clip_message(message + (f" (line {line})" if line else ""))})


def _read(text: str | bytes) -> tuple[str, dict[str, Any]]:
    from utilities.errors import InputError
    from utilities.yamlsafe import load_yaml

    try:
        data = load_yaml(text, source="yaml")
    except InputError as exc:
        message = clip_message(str(exc))
        raise ValidationError({field_of(message): message}) from None
    text = text.decode("utf-8-sig") if isinstance(text, bytes) else text
    if not isinstance(data, dict):
        what = "nothing (it is empty or only comments)" if data is None else type(data).__name__
        raise ValidationError(
            {"yaml": f"yaml: a design file is a mapping with {', '.join(TOP_KEYS)} (got {what})"}
        )
    for key in data:
        if key not in TOP_KEYS:
            raise _located(text, str(key), f"unknown field (known: {', '.join(TOP_KEYS)})")
    if data.get("version", SCHEMA_VERSION) != SCHEMA_VERSION:
        raise _located(text, "version", f"must be {SCHEMA_VERSION} (got {preview(data['version'])})")
    for key in ("name", "description"):
        if not isinstance(data.get(key, ""), str) or (key == "name" and not str(data.get(key) or "").strip()):
            raise _located(
                text,
                key,
                f"must be a {'non-empty ' if key == 'name' else ''}string (got {preview(data.get(key))})",
            )
    if not isinstance(data.get("cluster"), dict):
        raise _located(text, "cluster", f"must be a mapping (got {preview(data.get('cluster'))})")
    for key in data["cluster"]:
        if key not in ("generator", *CLUSTER_KEYS):
            raise _located(
                text, f"cluster.{key}", f"unknown field (known: generator, {', '.join(CLUSTER_KEYS)})"
            )
    if not isinstance(data.get("scenarios", []), list):
        raise _located(
            text, "scenarios", f"must be a list of scenarios (got {preview(data.get('scenarios'))})"
        )
    return text, data


def _build_design(text: str, data: Mapping[str, Any], *, team, user, name: str):
    from topology.services import generator_plan
    from topology.services.building import design_create_from_plan

    cluster = dict(data["cluster"])
    generator = cluster.pop("generator", None)
    try:
        plan = generator_plan(generator=generator, params={k: v for k, v in cluster.items() if v is not None})
    except ValidationError as error:
        field, messages = next(iter(error.message_dict.items()))
        path = f"cluster.{field}" if field in ("generator", *CLUSTER_KEYS) else "cluster"
        raise _located(text, path, messages[0].split(": ", 1)[-1]) from None
    return design_create_from_plan(
        plan=plan, name=name, team=team, user=user, description=str(data.get("description") or "")
    )


@transaction.atomic
def design_import_yaml(*, text: str | bytes, team, user, name: str | None = None):
    """Create a design and its scenarios from a design file (``design_export_yaml``'s output,
    or one edited by hand) in a team the user may change; all or nothing.

    Raises
    ------
    NotFound, Forbidden (``teams.permissions``); ValidationError ``{field path: "path: problem
    (line N)"}`` (``yaml`` for the text itself, ``name`` for a name the team has already).
    """
    from scenarios.services.scenarios import scenario_from_yaml
    from topology.services import design_name_check

    require(team, user, CHANGE)
    text, data = _read(text)
    name = design_name_check(team=team, name=name or data["name"])  # before the plan is built
    design = _build_design(text, data, team=team, user=user, name=name)
    for index, entry in enumerate(data.get("scenarios") or []):
        where = f"scenarios[{index}]"
        if not isinstance(entry, dict):
            raise _located(text, where, f"must be a scenario mapping (got {preview(entry)})")
        try:
            scenario_from_yaml(text=yaml.safe_dump(entry, sort_keys=False), design=design, user=user)
        except ValidationError as error:
            field, messages = next(iter(error.message_dict.items()))
            field = field if field not in ("__all__", "yaml") else ""
            raise _located(text, f"{where}.{field}".rstrip("."), messages[0]) from None
    return design
