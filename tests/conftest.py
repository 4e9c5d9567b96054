"""Fixtures shared by every test: the seed catalog (pure and in the database), users and teams,
a small generated design of team Alpha, a job that fits it and a scenario, and an outsider."""

from __future__ import annotations

import signal

import pytest

from topology.fabric.specs import load_catalog


def pytest_configure(config):
    """SIGTERM (a CI timeout, an operator's kill) unwinds the session like Ctrl-C, so the
    fixtures stop the Celery workers and servers they started in their own process groups;
    otherwise those outlive pytest and hold the test database the next run must recreate."""
    signal.signal(signal.SIGTERM, _interrupt)


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


@pytest.fixture(scope="session")
def catalog():
    """The seed catalog as pure specs (no database)."""
    return load_catalog()


@pytest.fixture
def catalog_db(db):
    """The seed catalog imported into the test database."""
    import yaml

    from topology.fabric.specs import DEFAULT_CATALOG_PATH
    from topology.services import catalog_import

    with open(DEFAULT_CATALOG_PATH, encoding="utf-8") as handle:
        catalog_import(data=yaml.safe_load(handle))


@pytest.fixture
def user(db, django_user_model):
    return django_user_model.objects.create_user("alice", password="pw-alice-123")


@pytest.fixture
def team(db, user):
    from teams.services import team_create

    return team_create(name="Alpha", users=[user])


@pytest.fixture(autouse=True)
def _fresh_design_caches():
    """Caches are keyed by (design id, version); a rolled-back test hands its ids to the next."""
    from django.core.cache import cache

    from topology.caches import clear_all

    clear_all()
    cache.clear()
    yield


@pytest.fixture
def design(catalog_db, team, user):
    """A 4-node DGX H100 rail-optimized design of team Alpha."""
    from tests.scenarios.conftest import make_design

    return make_design(team=team, user=user)


@pytest.fixture
def job():
    import copy

    from tests.scenarios.conftest import SMALL_JOB

    return copy.deepcopy(SMALL_JOB)


@pytest.fixture
def scenario(design, user, job):
    from scenarios.services import scenario_create

    return scenario_create(design=design, name="baseline", job=job, what_if={}, user=user)


@pytest.fixture
def outsider(db, django_user_model):
    """A user in another team, who must not see team Alpha's designs."""
    from teams.services import team_create

    bob = django_user_model.objects.create_user("bob", password="pw-bob-123")
    team_create(name="Beta", users=[bob])
    return bob
