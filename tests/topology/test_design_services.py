"""Saving a generated design, reading it back as a plan, whole-design rules and the command."""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError

from topology.fabric.generators import generate
from topology.models import Design, Gpu, Link, Node, PowerFeed, Rack, Switch
from topology.selectors import design_counts, design_plan
from topology.services import design_create_from_plan, design_validate


@pytest.fixture
def small_plan(catalog):
    return generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=64, oversubscription=2.0)


def test_design_save_creates_every_row(catalog_db, team, user, small_plan):
    design = design_create_from_plan(plan=small_plan, name="h100-64", team=team, user=user)
    summary = small_plan.summary()
    assert Node.objects.filter(rack__hall__design=design).count() == summary["servers"] == 64
    assert Gpu.objects.filter(node__rack__hall__design=design).count() == summary["gpus"] == 512
    assert Rack.objects.filter(hall__design=design).count() == summary["racks"]
    assert Switch.objects.filter(design=design).count() == sum(summary["switches"].values())
    assert Link.objects.filter(design=design).count() == sum(summary["links"].values())
    assert PowerFeed.objects.filter(design=design).count() == summary["feeds"]
    assert design_counts(design=design)["gpus"] == 512
    assert design.summary["bisection_gbps"] == summary["bisection_gbps"]


def test_saved_design_passes_the_whole_design_rules(catalog_db, team, small_plan):
    design = design_create_from_plan(plan=small_plan, name="ok", team=team)
    assert design_validate(design=design) == []


def test_whole_design_rules_catch_an_overloaded_rack(catalog_db, team, small_plan):
    design = design_create_from_plan(plan=small_plan, name="hot", team=team)
    rack = Rack.objects.filter(hall__design=design, kind=0).first()
    Rack.objects.filter(pk=rack.pk).update(power_budget_kw=10_000)
    problems = design_validate(design=design)
    assert any(p.startswith(f"rack {rack.name}: budget 10000 kW exceeds the side A feeds'") for p in problems)


def test_design_plan_round_trip_equals_the_generated_plan(catalog_db, team, small_plan):
    design = design_create_from_plan(plan=small_plan, name="rt", team=team)
    loaded = design_plan(design=design)
    assert loaded.summary() == small_plan.summary()
    for column in (
        "node_rack",
        "node_u",
        "switch_tier",
        "switch_rack",
        "link_a",
        "link_b",
        "link_tier",
        "feed_side",
        "feed_rack_rack",
        "rack_row",
        "rack_col",
    ):
        np.testing.assert_array_equal(getattr(loaded, column), getattr(small_plan, column), err_msg=column)


def test_design_plan_sees_an_edit_made_in_the_database(catalog_db, team, small_plan):
    design = design_create_from_plan(plan=small_plan, name="edit", team=team)
    Link.objects.filter(design=design, tier=1).update(gbps=200)
    loaded = design_plan(design=design)
    assert loaded.per_gpu_bisection_gbps() < small_plan.per_gpu_bisection_gbps()


def test_design_name_is_unique_per_team(catalog_db, team, small_plan):
    design_create_from_plan(plan=small_plan, name="dup", team=team)
    with pytest.raises(ValidationError, match="already has a design named 'dup'"):
        design_create_from_plan(plan=small_plan, name="dup", team=team)
    assert Design.objects.filter(name="dup").count() == 1


def test_every_door_that_names_a_design_keeps_one_rule_with_one_wording(catalog_db, team, user, catalog):
    """Create from a plan, generate, queue a build, fork, rename and the command line: a taken
    name, an over-long one and a blank one give the same message whichever door named it."""
    from topology.services import design_build_start, design_fork, design_generate, design_update

    plan = generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=4)
    params = {"server": "dgx-h100", "nodes": 4}
    design_create_from_plan(plan=plan, name="dup", team=team, user=user)
    other = design_create_from_plan(plan=plan, name="other", team=team, user=user)
    doors = {
        "create": lambda name: design_create_from_plan(plan=plan, name=name, team=team, user=user),
        "generate": lambda name: design_generate(
            generator="rail-optimized", params=params, name=name, team=team, user=user
        ),
        "build": lambda name: design_build_start(
            team=team, user=user, name=name, generator="rail-optimized", params=params
        ),
        "fork": lambda name: design_fork(design=other, team=team, user=user, name=name),
        "rename": lambda name: design_update(
            design=other, user=user, expected_version=other.version, name=name
        ),
    }
    max_length = Design._meta.get_field("name").max_length
    cases = {
        " dup ": f"name: team {team} already has a design named 'dup'",
        "x" * (max_length + 1): f"name: at most {max_length} characters (got {max_length + 1})",
        "  ": "name: required",
    }
    for door, call in doors.items():
        for name, message in cases.items():
            with pytest.raises(ValidationError) as caught:
                call(name)
            assert caught.value.message_dict == {"name": [message]}, (door, name)
    with pytest.raises(CommandError, match=f"^{cases[' dup ']}$"):
        call_command(
            "design", "generate", "rail-optimized", "--server", "dgx-h100", "--nodes", "4",
            "--save", "dup", "--team", team.name,
        )  # fmt: skip
    assert Design.objects.filter(team=team).count() == 2


def test_design_generate_command_reports_json(catalog_db, capsys):
    call_command("design", "generate", "rail-optimized", "--server", "dgx-h100", "--nodes", "2048", "--json")
    report = json.loads(capsys.readouterr().out)
    assert report["gpus"] == 16384 and report["servers"] == 2048
    assert report["switches"] == {"leaf": 512, "spine": 512, "core": 256, "scaleup": 0}
    assert report["links"] == {"server_leaf": 16384, "leaf_spine": 16384, "spine_core": 16384}
    assert report["per_gpu_bisection_gbps"] == 400.0
    assert report["feeds"] > 0 and report["it_power_kw"] > 20_000
    assert not Design.objects.exists()


def test_design_generate_command_saves_into_a_team(catalog_db, team, capsys):
    call_command(
        "design",
        "generate",
        "nvl72",
        "--server",
        "gb200-nvl72",
        "--nodes",
        "36",
        "--save",
        "nvl",
        "--team",
        team.name,
    )
    assert "saved as design" in capsys.readouterr().out
    design = Design.objects.get(name="nvl", team=team)
    assert design_counts(design=design)["gpus"] == 144


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--nodes", "0"], "nodes"),
        (["--nodes", "64", "--oversubscription", "0.5"], "oversubscription"),
        (["--nodes", "64", "--server", "nope"], "unknown slug 'nope'"),
    ],
)
def test_design_generate_command_rejects_bad_parameters(catalog_db, args, message):
    argv = ["design", "generate", "rail-optimized", "--server", "dgx-h100", *args]
    if "--server" in args[2:]:
        argv = ["design", "generate", "rail-optimized", *args]
    with pytest.raises(CommandError, match=message):
        call_command(*argv)


def test_design_generate_unknown_team_is_an_error(catalog_db):
    with pytest.raises(CommandError, match="team: no team named 'Nobody'"):
        call_command(
            "design",
            "generate",
            "fat-tree",
            "--server",
            "dgx-a100",
            "--nodes",
            "8",
            "--save",
            "x",
            "--team",
            "Nobody",
        )
