"""Fixtures shared by every test: the seed catalog (pure and in the database), users and teams."""

from __future__ import annotations

import pytest

from topology.fabric.specs import load_catalog


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
    from topology.services import team_create

    return team_create(name="Alpha", users=[user])


@pytest.fixture(autouse=True)
def _fresh_design_caches():
    """Caches are keyed by (design id, version); a rolled-back test hands its ids to the next."""
    from django.core.cache import cache

    from topology.caches import clear_all

    clear_all()
    cache.clear()
    yield
