"""Fixtures shared by every test: the seed catalog (pure and in the database), users and teams,
a small generated design of team Alpha, a job that fits it and a scenario, and an outsider."""

from __future__ import annotations

import copy
import functools
import signal

import pytest

from topology.fabric.specs import load_catalog


def pytest_configure(config):
    """SIGTERM (a CI timeout, an operator's kill) unwinds the session like Ctrl-C, so the
    fixtures stop the Celery workers and servers they started in their own process groups;
    otherwise those outlive pytest and hold the test database the next run must recreate.

    Users of this process hash their passwords with a fast hasher, as Django's testing guide
    advises: the production PBKDF2 (a million rounds) took half a second per user and per login,
    most of a typical test's time. Servers and workers the tests start keep the real hashers.
    """
    signal.signal(signal.SIGTERM, _interrupt)
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


#: A test body of the fast tier (``make test-fast``) should take less than this; one that takes
#: longer is named at the end of the run, to be marked ``slow`` (session fixtures are set up
#: once, so only the call is timed).
FAST_TEST_S = 1.0
TIER_MARKERS = ("slow", "e2e", "integration")
_unmarked_slow: list[tuple[float, str]] = []


def pytest_collection_modifyitems(config, items):
    """The tiers hold: a browser test is marked ``e2e`` and a test on the real Celery worker
    ``integration``, so ``make test-fast`` never starts Chromium or a worker."""
    wrong = []
    for item in items:
        if item.nodeid.startswith("tests/e2e/") and not item.get_closest_marker("e2e"):
            wrong.append(f"{item.nodeid}: mark it e2e")
        if "celery_worker_process" in item.fixturenames and not item.get_closest_marker("integration"):
            wrong.append(f"{item.nodeid}: mark it integration")
    if wrong:
        raise pytest.UsageError("tests outside their tier:\n" + "\n".join(wrong[:20]))


def pytest_runtest_logreport(report):
    if report.when == "call" and report.duration > FAST_TEST_S:
        if not any(marker in report.keywords for marker in TIER_MARKERS):
            _unmarked_slow.append((report.duration, report.nodeid))


def pytest_terminal_summary(terminalreporter):
    if _unmarked_slow:
        terminalreporter.section("fast-tier tests over 1 s (mark them slow, or make them faster)")
        for took, nodeid in sorted(_unmarked_slow, reverse=True)[:30]:
            terminalreporter.write_line(f"{took:6.2f}s {nodeid}")


@pytest.fixture(scope="session")
def catalog():
    """The seed catalog as pure specs (no database)."""
    return load_catalog()


@functools.cache
def _seed_catalog_data() -> dict:
    """The seed catalog file's data, parsed once per session (each test gets a copy)."""
    import yaml

    from topology.fabric.specs import DEFAULT_CATALOG_PATH

    with open(DEFAULT_CATALOG_PATH, encoding="utf-8") as handle:
        return yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@pytest.fixture
def catalog_db(db):
    """The seed catalog imported into the test database."""
    from topology.services import catalog_import

    catalog_import(data=copy.deepcopy(_seed_catalog_data()))


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
