"""Schemathesis over our own OpenAPI schema, in process (the Django WSGI app, the test
database): for every operation, generated requests (valid and invalid) never get a 500 and
every response conforms to the schema (a documented status, content type and body shape).

Deterministic (``derandomize``) and bounded (``MAX_EXAMPLES`` per operation) to stay near a
minute on two cores. Ids in paths and bodies point at real objects half of the time, so the
requests reach the services and not only the 404 door.
"""

from __future__ import annotations

import pytest
import schemathesis
from django.core.wsgi import get_wsgi_application
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

pytestmark = pytest.mark.slow

MAX_EXAMPLES = 12
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]

schema = schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application())


@pytest.fixture
def keep_the_test_connection():
    """The WSGI app closes "old" connections around each request, which in a test means the
    test's own transaction; Django's test client unhooks the same signals."""
    from django.core import signals
    from django.db import close_old_connections

    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def fuzz_world(keep_the_test_connection, catalog_db, design, scenario, team, django_user_model):
    """Real objects for generated ids to land on, and a superuser's token (every door opens)."""
    from scenarios.models import Run
    from teams.tokens import api_token_create

    root = django_user_model.objects.create_superuser("fuzz-root", password=None)
    run = Run.objects.create(scenario=scenario, kind="step", status="succeeded", progress=1.0)
    return {
        "token": api_token_create(user=root).key,
        "ids": {"designs": design.pk, "scenarios": scenario.pk, "runs": run.pk, "teams": team.pk},
        "body_ids": {"design": design.pk, "scenario": scenario.pk, "team": team.pk},
    }


def _aim_at_real_objects(case, world) -> None:
    """Even generated ids become the real object's id (deterministic, as the generation is)."""
    collection = case.operation.path.split("/")[2]
    params = case.path_parameters or {}
    if isinstance(params.get("id"), int) and params["id"] % 2 == 0 and collection in world["ids"]:
        params["id"] = world["ids"][collection]
    if isinstance(case.body, dict):
        for key, real in world["body_ids"].items():
            if isinstance(case.body.get(key), int) and case.body[key] % 2 == 0:
                case.body[key] = real


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_api_answers_within_its_schema_and_never_500(case, fuzz_world):
    _aim_at_real_objects(case, fuzz_world)
    case.call_and_validate(headers={"Authorization": f"Token {fuzz_world['token']}"}, checks=CHECKS)
