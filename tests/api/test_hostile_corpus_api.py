"""The hostile scenario corpus (tests/corpus/) posted to the API's scenario import, as the raw
body a script sends (``Content-Type: application/yaml``): every file is refused with a 4xx whose
JSON errors name the field (or the text itself: ``yaml``/``body``), quickly; never a 500.

Each request runs in a forked child under memory and CPU ceilings (the guard of the web import
test), so a regression of the bounded loader fails this test instead of the machine.
"""

from __future__ import annotations

import json

import pytest

from tests.corpus.hostile import FILE_CASES, corpus_files
from tests.scenarios.test_hostile_import import ACCEPTED, CPU_LIMIT_S, guarded_post

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


class RawYamlClient:
    """``post(url, data)`` sending ``data`` as the whole body, as ``curl --data-binary`` does."""

    def __init__(self, client):
        self.client = client

    def post(self, url, data):
        return self.client.post(url, data, content_type="application/yaml")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return dict((case.file, path) for case, path in corpus_files(tmp_path_factory.mktemp("generated")))


@pytest.mark.parametrize("case", [pytest.param(c, id=c.file) for c in FILE_CASES])
def test_api_scenario_import_refuses_hostile_file_with_a_4xx_naming_the_field(api, design, files, case):
    body = files[case.file].read_bytes()
    reply = guarded_post(RawYamlClient(api), f"/api/scenarios/import/?design={design.pk}", body)
    assert not reply.failure, reply.failure
    assert reply.cpu_s < CPU_LIMIT_S, f"{reply.cpu_s:.1f} s CPU"
    if case.file in ACCEPTED:
        assert reply.status == 201, reply.page[:500]
        return
    assert reply.status is not None and 400 <= reply.status < 500, (reply.status, reply.page[:300])
    errors = json.loads(reply.page)["errors"]
    messages = [m for found in errors.values() for m in found]
    assert messages and all(len(m) <= 300 for m in messages)
    field = case.expected.split(":", 1)[0]
    if field in ("file", "scenario"):  # the text itself: the API calls it yaml (or body, past the limit)
        assert set(errors) & {"yaml", "body", "scenario"}, errors
    else:
        assert field in errors or any(m.startswith(field) for m in messages), (field, errors)
