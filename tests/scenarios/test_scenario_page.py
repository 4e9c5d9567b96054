"""The scenario page tells the truth: what runs is what the page shows (a stale page's run or
save is refused, unsaved edits are saved first), a viewer is offered no action, choosing a
model preset proposes a layout that fits, and the editor folds all but the basics with help on
every input and every run option."""

from __future__ import annotations

import time

import pytest
from django.urls import reverse

from scenarios.forms import ScenarioForm, default_job
from scenarios.models import Run, Scenario
from scenarios.scenario_file import scenario_revision
from scenarios.services import scenario_create, scenario_update
from teams.models import TeamMembership
from topology.fabric.generators import generate
from topology.services import design_create_from_plan

NODES = 8


@pytest.fixture
def design(catalog_db, catalog, team, user):
    plan = generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=NODES)
    return design_create_from_plan(plan=plan, name="H100 slice", team=team, user=user)


@pytest.fixture
def big_design(catalog_db, catalog, team, user):
    """64 DGX H100 (512 GPUs): enough HBM for Llama 3 405B with a sharded layout."""
    plan = generate("rail-optimized", catalog=catalog, server="dgx-h100", nodes=64)
    return design_create_from_plan(plan=plan, name="H100 x64", team=team, user=user)


@pytest.fixture
def scenario(design, user):
    return scenario_create(design=design, name="Baseline", job=default_job(gpus=NODES * 8), what_if={}, user=user)


def test_propose_layout_llama3_405b_fits_h100(client, user, big_design):
    client.force_login(user)
    url = reverse("scenarios:propose-layout", args=[big_design.pk])
    started = time.perf_counter()
    response = client.get(url, {"preset": "llama3-405b"})
    elapsed = time.perf_counter() - started
    assert response.status_code == 200, response.content
    body = response.json()
    print(body, elapsed)
    assert body["layout"] is not None
    assert body["hbm_gib"] == 80
    assert body["memory_gib_per_gpu"] <= 80
