"""API paths holding control characters are answered in the API's JSON error shape, never the
HTML page of the site (schemathesis found a newline in a member id)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("segment", ["a%0Ab", "%0D%0A", "%09x", "x%0A"])
def test_api_path_with_a_control_character_is_a_json_404(client, db, segment):
    response = client.delete(f"/api/teams/1/members/{segment}/")
    assert response.status_code in (401, 404), response.status_code
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
