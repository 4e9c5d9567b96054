"""The demo seed gives a newcomer answers on the first page: scenarios on the demo designs with a
finished run of every kind, computed at seed time in a few seconds; a re-seed never duplicates a
run and never touches a scenario a user edited."""

from __future__ import annotations

import time

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse

from scenarios.models import Run, Scenario
from scenarios.services import run_delete, scenario_update
from scenarios.services.demo import DEMO_SCENARIOS
from teams.services import DEMO_PASSWORD, DEMO_USERNAME

pytestmark = pytest.mark.slow


def _full() -> Scenario:
    spec = DEMO_SCENARIOS[0]
    return Scenario.objects.get(design__name=spec.design, name=spec.name)


def test_demo_seed_finishes_one_run_of_every_kind_and_reseeding_adds_none(client, catalog_db):
    started = time.process_time()
    call_command("demo_seed", verbosity=0, with_demo_user=True)
    seed_cpu_s = time.process_time() - started
    scenario = _full()
    kinds = sorted(scenario.runs.values_list("kind", flat=True))
    assert kinds == ["failures", "power", "search", "step", "sweep"]  # every kind of scenarios/kinds/
    assert set(scenario.runs.values_list("status", flat=True)) == {"succeeded"}
    power = scenario.runs.get(kind="power")
    assert power.summary["event_source"].startswith("failures run #")  # replays the seeded trial
    assert seed_cpu_s < 60, seed_cpu_s  # designs and runs together; the runs take a few seconds
    total = Run.objects.count()
    call_command("demo_seed", verbosity=0, with_demo_user=True)
    assert Run.objects.count() == total
    assert sorted(_full().runs.values_list("kind", flat=True)) == kinds
    # The first page a newcomer opens links to finished answers.
    demo = get_user_model().objects.get(username=DEMO_USERNAME)
    assert demo.check_password(DEMO_PASSWORD)
    client.force_login(demo)
    html = client.get(reverse("scenarios:scenario-list")).content.decode()
    assert scenario.name in html


def test_reseeding_never_touches_a_scenario_a_user_edited(catalog_db):
    call_command("demo_seed", verbosity=0, with_demo_user=True)
    scenario = _full()
    user = scenario.created_by
    time.sleep(2.1)  # an edit comes later than the seed
    job = {**scenario.job, "global_batch": scenario.job["global_batch"] * 2}
    scenario = scenario_update(scenario=scenario, user=user, job=job, description="mine now")
    run_delete(run=scenario.runs.get(kind="power"), user=user)
    edited = Scenario.objects.get(pk=scenario.pk)
    call_command("demo_seed", verbosity=0, with_demo_user=True)
    again = Scenario.objects.get(pk=scenario.pk)
    assert (again.job, again.description, again.updated) == (edited.job, "mine now", edited.updated)
    assert not again.runs.filter(kind="power").exists()  # no run added to the user's scenario
    assert Scenario.objects.filter(design=again.design, name=again.name).count() == 1
