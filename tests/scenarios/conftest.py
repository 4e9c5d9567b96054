"""Fixtures of the scenarios tests: a small generated design, a job that fits it, scenarios."""

from __future__ import annotations

import pytest

#: A GPT-like 1.3B job for 4 DGX H100 nodes (32 GPUs): tp 8 within a server, dp 4.
SMALL_JOB = {
    "model": {"layers": 24, "hidden": 2048, "heads": 16, "vocab": 51200, "seq_len": 2048},
    "global_batch": 64,
    "micro_batch": 2,
    "parallel": {"tp": 8, "pp": 1, "dp": 4},
    "recompute": "selective",
    "precision": "bf16",
}


def make_design(*, team, user, name="H100 x4", nodes=4, server="dgx-h100", generator="rail-optimized"):
    from topology.fabric.generators import generate
    from topology.selectors import catalog_load
    from topology.services import design_create_from_plan

    plan = generate(generator, catalog=catalog_load(), server=server, nodes=nodes)
    return design_create_from_plan(plan=plan, name=name, team=team, user=user)


@pytest.fixture
def design(catalog_db, team, user):
    """A 4-node DGX H100 rail-optimized design of team Alpha."""
    return make_design(team=team, user=user)


@pytest.fixture
def job():
    import copy

    return copy.deepcopy(SMALL_JOB)


@pytest.fixture
def scenario(design, user, job):
    from scenarios.services import scenario_create

    return scenario_create(design=design, name="baseline", job=job, what_if={}, user=user)


@pytest.fixture
def outsider(db, django_user_model):
    """A user in another team, who must not see team Alpha's designs."""
    from topology.services import team_create

    bob = django_user_model.objects.create_user("bob", password="pw-bob-123")
    team_create(name="Beta", users=[bob])
    return bob
