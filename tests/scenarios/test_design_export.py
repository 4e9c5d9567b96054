"""A design with its scenarios as one YAML file: ``simulate`` reads it, importing it back is
exact, and a file edited by hand with a bad field is refused naming the field and the line."""

from __future__ import annotations

import copy

import pytest
import yaml
from django.core.exceptions import ValidationError
from django.urls import reverse

from scenarios.models import Scenario
from scenarios.services import scenario_create
from scenarios.services.designs import design_export_yaml, design_import_yaml, line_of
from scenarios.sim.format.scenario import load_scenarios
from teams.models import TeamMembership
from topology.models import Node, Rack, Switch


@pytest.fixture
def two_scenarios(scenario, user, job):
    slow = copy.deepcopy(job)
    slow["micro_batch"] = 1
    scenario_create(
        design=scenario.design,
        name="stragglers",
        job=slow,
        what_if={"straggler_spread": 0.05, "steps": 16},
        user=user,
        description="a slow day",
    )
    return scenario.design


@pytest.fixture
def beta_editor(outsider, user):
    """alice is also an editor of Beta, where the design is imported."""
    beta = outsider.teams.get()
    TeamMembership.objects.create(team=beta, user=user, role="editor")
    return beta


def _rows(design) -> tuple:
    return (
        sorted(
            Rack.objects.filter(hall__design=design).values_list("name", "row", "column", "power_budget_kw")
        ),
        sorted(
            Node.objects.filter(rack__hall__design=design).values_list("name", "rack__name", "u_position")
        ),
        sorted(Switch.objects.filter(design=design).values_list("name", "tier", "rack__name", "ports")),
    )


def test_simulate_reads_the_exported_design_file(two_scenarios, user, tmp_path):
    text = design_export_yaml(design=two_scenarios, user=user)
    path = tmp_path / "design.yaml"
    path.write_text(text, encoding="utf-8")
    parsed = load_scenarios(path)
    assert [s.name for s in parsed] == ["baseline", "stragglers"]
    data = yaml.safe_load(text)
    assert data["cluster"] == data["scenarios"][0]["cluster"] == data["scenarios"][1]["cluster"]
    assert data["cluster"]["generator"] == "rail-optimized" and data["cluster"]["nodes"] == 4


def test_import_then_export_is_exact(two_scenarios, user, beta_editor):
    text = design_export_yaml(design=two_scenarios, user=user)
    copy_ = design_import_yaml(text=text, team=beta_editor, user=user)
    assert copy_.team == beta_editor and copy_.name == two_scenarios.name
    assert design_export_yaml(design=copy_, user=user) == text
    assert _rows(copy_) == _rows(two_scenarios)
    fields = ("name", "description", "job", "what_if")
    assert list(Scenario.objects.filter(design=copy_).order_by("name").values_list(*fields)) == list(
        Scenario.objects.filter(design=two_scenarios).order_by("name").values_list(*fields)
    )
    assert copy_.changes.get().summary.startswith("created from generator rail-optimized")


def test_a_hand_edited_bad_field_names_the_field_and_the_line(two_scenarios, user, beta_editor):
    text = design_export_yaml(design=two_scenarios, user=user)
    lines = text.splitlines()
    tp = next(i for i, line in enumerate(lines) if line.strip().startswith("tp:") and i > 20)
    lines[tp] = lines[tp].replace("8", "3")
    with pytest.raises(ValidationError) as error:
        design_import_yaml(text="\n".join(lines), team=beta_editor, user=user)
    ((field, (message,)),) = error.value.message_dict.items()
    assert field.startswith("scenarios[") and field.endswith("job.parallel.tp")
    assert message.startswith(field + ": ") and message.endswith(f"(line {tp + 1})")
    assert not beta_editor.designs.exists()  # all or nothing


@pytest.mark.parametrize(
    ("edit", "field", "words"),
    [
        (("nodes: 4", "nodes: 0"), "cluster.nodes", "must be ≥ 1 (got 0)"),
        (("generator: rail-optimized", "generator: torus"), "cluster.generator", "must be one of"),
        (("server: dgx-h100", "sever: dgx-h100"), "cluster.sever", "unknown field"),
        (("version: 1", "version: 2"), "version", "must be 1 (got 2)"),
        (("steps: 16", "steps: .nan"), "scenarios[1].what_if.steps", "finite"),
    ],
)
def test_each_bad_field_is_named_with_its_line(two_scenarios, user, beta_editor, edit, field, words):
    text = design_export_yaml(design=two_scenarios, user=user).replace(*edit, 1)
    with pytest.raises(ValidationError) as error:
        design_import_yaml(text=text, team=beta_editor, user=user)
    ((_key, (message,)),) = error.value.message_dict.items()
    assert message.startswith(field) and words in message and "(line " in message, message


def test_a_name_the_team_has_is_refused_and_a_new_name_is_taken(two_scenarios, user):
    text = design_export_yaml(design=two_scenarios, user=user)
    with pytest.raises(ValidationError, match="already has a design named 'H100 x4'"):
        design_import_yaml(text=text, team=two_scenarios.team, user=user)
    again = design_import_yaml(text=text, team=two_scenarios.team, user=user, name="H100 x4 again")
    assert again.scenarios.count() == 2


def test_a_design_file_is_named_by_the_one_design_name_rule(two_scenarios, user):
    """The import of a design file refuses a name with the words every door that names a design
    uses (``topology.services.design_name_check``), before it builds anything."""
    from topology.models import Design

    team = two_scenarios.team
    text = design_export_yaml(design=two_scenarios, user=user)
    with pytest.raises(ValidationError) as taken:
        design_import_yaml(text=text, team=team, user=user)
    assert taken.value.message_dict == {"name": [f"name: team {team} already has a design named 'H100 x4'"]}
    with pytest.raises(ValidationError) as too_long:
        design_import_yaml(text=text, team=team, user=user, name="x" * 121)
    assert too_long.value.message_dict == {"name": ["name: at most 120 characters (got 121)"]}
    assert Design.objects.filter(team=team).count() == 1


def test_a_hand_edited_design_does_not_export(design, user):
    from topology.services import rack_add

    rack_add(
        design=design, user=user, expected_version=1, like=Rack.objects.filter(hall__design=design).first()
    )
    design.refresh_from_db()
    with pytest.raises(ValidationError, match="built or edited by hand"):
        design_export_yaml(design=design, user=user)


def test_line_of_finds_nested_paths():
    text = "a:\n  b:\n  - x: 1\n  - x: 2\n    y: 3\n"
    assert line_of(text, "a.b[1].y") == 5 and line_of(text, "a.b[0]") == 3 and line_of(text, "a.zz") == 1


def test_the_pages_export_and_import(client, two_scenarios, user, beta_editor):
    client.force_login(user)
    response = client.get(reverse("scenarios:design-export", args=[two_scenarios.pk]))
    assert response["Content-Disposition"] == 'attachment; filename="h100-x4.yaml"'
    text = response.content.decode()
    url = reverse("scenarios:design-import")
    bad = client.post(url, {"team": beta_editor.pk, "text": text.replace("nodes: 4", "nodes: -4", 1)})
    assert bad.status_code == 400 and "cluster.nodes: must be ≥ 1 (got -4) (line" in bad.content.decode()
    good = client.post(url, {"team": beta_editor.pk, "text": text})
    assert good.status_code == 302 and beta_editor.designs.get().scenarios.count() == 2
