"""Designs as shared documents: edits through the design-change service, the history of who
changed what and when, optimistic concurrency, forks, deletes, background saves (teams, members
and roles: ``tests/teams/test_services.py``)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError

from scenarios.models import Run
from teams.permissions import Forbidden, NotFound
from topology import services
from topology.choices import Generator, RackKind, SwitchTier
from topology.models import Design, DesignBuild, DesignChange, Node, PowerFeed, PowerFeedType, Rack, Switch
from topology.selectors import design_plan, design_summary_now


@pytest.fixture
def editor(django_user_model, team):
    from teams.models import TeamMembership

    bob = django_user_model.objects.create_user("carol")
    TeamMembership.objects.create(team=team, user=bob, role="editor")
    return bob


@pytest.fixture
def viewer(django_user_model, team):
    from teams.models import TeamMembership

    vic = django_user_model.objects.create_user("victor")
    TeamMembership.objects.create(team=team, user=vic, role="viewer")
    return vic


def _compute_rack(design) -> Rack:
    return Rack.objects.filter(hall__design=design, kind=RackKind.COMPUTE).order_by("pk").first()


def _entries(design) -> list[DesignChange]:
    return list(DesignChange.objects.filter(design=design).order_by("version"))


# --- generating ----------------------------------------------------------------------------------


def test_design_generate_and_the_command_share_one_validation(catalog_db, team, user):
    bad = {"server": "dgx-h100", "nodes": 0}
    with pytest.raises(ValidationError) as web:
        services.design_generate(generator="rail-optimized", params=bad, name="x", team=team, user=user)
    with pytest.raises(CommandError) as cli:
        call_command("design", "generate", "rail-optimized", "--server", "dgx-h100", "--nodes", "0")
    assert web.value.message_dict == {"nodes": ["nodes: must be ≥ 1 (got 0)"]}
    assert str(cli.value) == "nodes: must be ≥ 1 (got 0)"
    with pytest.raises(ValidationError, match=r"params: unknown racks"):
        services.generator_plan(generator="fat-tree", params={"server": "dgx-h100", "nodes": 4, "racks": 2})
    with pytest.raises(ValidationError, match="server: unknown slug 'nope'"):
        services.generator_plan(generator="fat-tree", params={"server": "nope", "nodes": 4})


def test_a_generated_design_records_one_creation_entry_and_reports_progress(catalog_db, team, user):
    seen = []
    design = services.design_generate(
        generator="rail-optimized",
        params={"server": "dgx-h100", "nodes": 64},
        name="Sixty-four",
        team=team,
        user=user,
        on_progress=lambda fraction, stage: seen.append((fraction, stage)),
    )
    (entry,) = _entries(design)
    assert entry.version == 1 and entry.user == user and entry.user_name == "alice"
    assert entry.summary.startswith("created from generator rail-optimized with parameters server=dgx-h100")
    assert "nodes=64" in entry.summary
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[0] > 0 and fractions[-1] < 1
    assert {"racks", "servers", "GPUs", "links", "power feeds"} <= {s for _, s in seen}


def test_a_viewer_cannot_generate_into_the_team(catalog_db, team, viewer):
    with pytest.raises(Forbidden):
        services.design_generate(
            generator="fat-tree", params={"server": "dgx-h100", "nodes": 4}, name="x", team=team, user=viewer
        )


def test_a_build_saves_in_the_worker_and_records_how_it_ended(catalog_db, team, user):
    build = services.design_build_start(
        team=team, user=user, name="Built", generator="nvl72", params={"server": "gb200-nvl72", "nodes": 36}
    )
    assert build.status == "queued"
    assert services.design_build_execute(build_id=build.pk) == "succeeded"
    build.refresh_from_db()
    assert build.status == "succeeded" and build.design.summary["gpus"] == 144
    assert services.design_build_execute(build_id=build.pk) == "skipped"  # a redelivered task
    with pytest.raises(ValidationError, match="nodes: nvl72 counts compute trays"):
        services.design_build_start(
            team=team, user=user, name="Bad", generator="nvl72", params={"server": "gb200-nvl72", "nodes": 20}
        )
    clash = DesignBuild.objects.create(
        team=team,
        user=user,
        kind="generate",
        name="Built",
        generator="fat-tree",
        parameters={"server": "dgx-h100", "nodes": 4},
        task_id="t",
    )
    assert services.design_build_execute(build_id=clash.pk) == "failed"
    clash.refresh_from_db()
    assert "already has a design named 'Built'" in clash.error


# --- edits, history, concurrency -------------------------------------------------------------------


def test_history_records_who_what_and_when_for_each_kind_of_edit(design, user, editor, admin_client):
    rack = _compute_rack(design)
    feed = PowerFeed.objects.filter(racks=rack).order_by("pk").first()
    services.design_update(design=design, user=editor, expected_version=1, name="Renamed", description="why")
    services.rack_update(rack=rack, user=editor, expected_version=2, power_budget_kw=20.0)
    services.feed_update(feed=feed, user=user, expected_version=3, panel="PDU-9", new_panel=True)
    services.rack_add(design=design, user=editor, expected_version=4, like=rack)
    added = Rack.objects.filter(hall__design=design).order_by("-pk").first()
    services.rack_remove(rack=added, user=user, expected_version=5)
    gpu = design_plan(design=Design.objects.get(pk=design.pk)).gpu
    from topology.models import GpuType

    gpu_row = GpuType.objects.get(slug=gpu.slug)
    admin_client.post(
        f"/admin/topology/gputype/{gpu_row.pk}/change/",
        {
            **{
                f.name: getattr(gpu_row, f.name)
                for f in GpuType._meta.concrete_fields
                if f.name not in ("id",)
            },
            "tdp_w": gpu_row.tdp_w + 1,
            "efficiency": "{}",
            "sources": "{}",
        },
    )
    entries = _entries(design)
    assert [e.version for e in entries] == list(range(1, len(entries) + 1))
    by_version = {e.version: e for e in entries}
    assert by_version[2].user_name == "carol" and by_version[2].changes == [
        {"field": "name", "label": "name", "before": "H100 x4", "after": "Renamed"},
        {"field": "description", "label": "description", "before": "—", "after": "why"},
    ]
    assert by_version[3].object_kind == "rack" and by_version[3].changes[0]["field"] == "power_budget_kw"
    assert by_version[3].changes[0]["after"] == "20" and "power_budget_kw" not in by_version[3].summary
    assert by_version[4].user_name == "alice" and by_version[4].changes[0]["after"] == "PDU-9"
    assert by_version[5].action == "added" and by_version[5].summary.startswith(
        f"rack {added.name} added like"
    )
    assert by_version[6].action == "removed" and added.name in by_version[6].summary
    assert by_version[7].action == "catalog" and "TDP W" in by_version[7].summary
    assert all(e.time is not None for e in entries)


def test_two_forms_opened_at_one_version_the_second_save_is_refused(design, user, editor):
    rack = _compute_rack(design)
    opened_at = design.version
    services.rack_update(rack=rack, user=user, expected_version=opened_at, power_budget_kw=21.0)
    with pytest.raises(services.DesignConflict) as conflict:
        services.rack_update(rack=rack, user=editor, expected_version=opened_at, power_budget_kw=19.0)
    message = str(conflict.value.messages[0])
    assert "was changed by alice at" in message and "since you opened it" in message
    assert "nothing was saved" in message and conflict.value.changed_by == "alice"
    rack.refresh_from_db()
    assert rack.power_budget_kw == 21.0 and Design.objects.get(pk=design.pk).version == opened_at + 1
    with pytest.raises(services.DesignConflict):
        services.design_update(design=design, user=editor, expected_version=opened_at, name="Mine")
    assert Design.objects.get(pk=design.pk).name == "H100 x4"


def test_edits_without_a_change_make_no_version_and_a_viewer_edits_nothing(design, viewer):
    rack = _compute_rack(design)
    services.rack_update(
        rack=rack, user=design.owner, expected_version=1, power_budget_kw=rack.power_budget_kw
    )
    assert Design.objects.get(pk=design.pk).version == 1
    with pytest.raises(Forbidden):
        services.rack_update(rack=rack, user=viewer, expected_version=1, power_budget_kw=1.0)


def test_bad_budgets_and_feeds_name_the_field_and_the_limit(design, user):
    rack = _compute_rack(design)
    for bad in (float("nan"), "10", True):
        with pytest.raises(ValidationError, match="power_budget_kw: must be a finite number"):
            services.rack_update(rack=rack, user=user, expected_version=1, power_budget_kw=bad)
    with pytest.raises(ValidationError, match=r"exceeds the side A feeds' derated capacity \(\d+\.\d kW\)"):
        services.rack_update(rack=rack, user=user, expected_version=1, power_budget_kw=10_000.0)
    feed = PowerFeed.objects.filter(racks=rack).order_by("pk").first()
    smallest = min(PowerFeedType.objects.all(), key=lambda t: t.capacity_kw)
    if smallest.capacity_kw < rack.power_budget_kw:
        with pytest.raises(ValidationError) as error:
            services.feed_update(feed=feed, user=user, expected_version=1, feed_type=smallest)
        assert "feed_type" in error.value.message_dict
    with pytest.raises(ValidationError, match="feed_type: no power-feed type 'nope'"):
        services.feed_update(feed=feed, user=user, expected_version=1, feed_type="nope")
    with pytest.raises(ValidationError, match="version: must be the design version"):
        services.rack_update(rack=rack, user=user, expected_version="1", power_budget_kw=1.0)
    assert Design.objects.get(pk=design.pk).version == 1


def test_a_rack_added_like_another_is_cabled_to_free_leaf_ports_and_simulates(design, user):
    like = _compute_rack(design)
    servers_before = Node.objects.filter(rack__hall__design=design).count()
    rack = services.rack_add(design=design, user=user, expected_version=1, like=like)
    design.refresh_from_db()
    assert rack.nodes.count() == like.nodes.count() and rack.power_budget_kw == like.power_budget_kw
    assert design.generator == Generator.MANUAL and design.parameters["derived_from"] == "rail-optimized"
    plan = design_plan(design=design)  # the rows still make a valid fabric
    assert plan.n_nodes == servers_before + like.nodes.count()
    assert design.summary["servers"] == plan.n_nodes == design_summary_now(design=design)["servers"]
    for node in rack.nodes.all():
        assert node.links.count() == node.server_type.nics_per_server
        assert {link.upper_switch.tier for link in node.links.all()} == {SwitchTier.LEAF}
    assert {f.side for f in rack.feeds.all()} == {0, 1}
    assert services.design_validate(design=design) == []


def test_racks_of_switches_and_the_last_servers_cannot_be_removed(design, user):
    network = Rack.objects.filter(hall__design=design, kind=RackKind.NETWORK).first()
    with pytest.raises(ValidationError, match="scale-out switches that other racks' servers connect to"):
        services.rack_remove(rack=network, user=user, expected_version=1)
    compute = list(Rack.objects.filter(hall__design=design, kind=RackKind.COMPUTE))
    if len(compute) == 1:
        with pytest.raises(ValidationError, match="the design's last servers"):
            services.rack_remove(rack=compute[0], user=user, expected_version=1)
    assert Switch.objects.filter(design=design).exists() and Design.objects.get(pk=design.pk).version == 1


# --- fork and delete -------------------------------------------------------------------------------


def test_a_fork_copies_the_design_as_saved_with_its_scenarios_into_another_team(scenario, user, outsider):
    from teams.models import TeamMembership

    design = scenario.design
    rack = _compute_rack(design)
    services.rack_update(rack=rack, user=user, expected_version=1, power_budget_kw=22.5)
    beta = outsider.teams.get()
    with pytest.raises(NotFound):
        services.design_fork(design=design, team=beta, user=user)  # alice is not in Beta
    TeamMembership.objects.create(team=beta, user=user, role="editor")
    copy = services.design_fork(design=design, team=beta, user=user)
    assert copy.team == beta and copy.name == "H100 x4 (fork)" and copy.version == 1
    assert Rack.objects.get(hall__design=copy, name=rack.name).power_budget_kw == 22.5
    assert sorted(Node.objects.filter(rack__hall__design=copy).values_list("name", flat=True)) == sorted(
        Node.objects.filter(rack__hall__design=design).values_list("name", flat=True)
    )
    assert list(copy.scenarios.values_list("name", "job")) == [(scenario.name, scenario.job)]
    assert not Run.objects.filter(scenario__design=copy).exists()
    (entry,) = _entries(copy)
    assert entry.summary == "forked from “H100 x4” version 2 of team Alpha"


def test_deleting_a_design_cancels_its_runs_first_and_needs_a_team_admin(scenario, user, editor, monkeypatch):
    from scenarios.services import runs

    cancelled = []
    monkeypatch.setattr(runs.queue, "revoke", lambda task_id: cancelled.append(task_id))
    design = scenario.design
    active = Run.objects.create(scenario=scenario, status="running", task_id="live-task")
    Run.objects.create(scenario=scenario, status="succeeded", task_id="done-task")
    with pytest.raises(Forbidden):
        services.design_delete(design=design, user=editor)
    services.design_delete(design=design, user=user)
    assert cancelled == ["live-task"] and not Design.objects.filter(pk=design.pk).exists()
    assert not Run.objects.filter(pk=active.pk).exists()
