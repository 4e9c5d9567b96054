"""Static files as production serves them (STATIC_COLLECTED=1 and DEBUG=0, as the Docker image runs): after
``collectstatic`` every page links content-hashed names, and WhiteNoise sends plotly.js (4.8 MB)
gzip-compressed with a one-year immutable cache; the favicon a page links exists.

A real ``manage.py serve`` in a subprocess, on a temporary TWIN_VAR_DIR (its own STATIC_ROOT).
"""

from __future__ import annotations

import json
import re
import secrets
import urllib.request

import pytest

from tests.e2e.conftest import PYTHON, Server, base_env, free_port, manage, wait_for_http

pytestmark = pytest.mark.e2e

ONE_YEAR_S = 365 * 24 * 3600


def _get(url: str, **headers: str):
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status, dict(response.headers), response.read()


def test_collected_static_files_are_compressed_and_cached_for_a_year(tmp_path):
    env = base_env(
        TWIN_VAR_DIR=str(tmp_path / "var"),
        STATIC_COLLECTED="1",
        DEBUG="0",  # Django links hashed names only without DEBUG
        SECRET_KEY=secrets.token_urlsafe(50),
        SECURE_SSL_REDIRECT="0",
        SECURE_HSTS_SECONDS="0",
        SECURE_COOKIES="0",
    )
    manage(env, "migrate", "--noinput")
    manage(env, "collectstatic", "--noinput")
    manifest = json.loads((tmp_path / "var" / "staticfiles" / "staticfiles.json").read_text())["paths"]
    plotly = manifest["vendor/plotly/plotly.min.js"]
    assert plotly != "vendor/plotly/plotly.min.js"  # content-hashed
    port = free_port()
    server = Server("serve", [PYTHON, "manage.py", "serve", "--port", str(port)], env, tmp_path)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for_http(f"{base}/login/", server)
        _, _, page = _get(f"{base}/login/")
        favicon = re.search(rb'rel="icon" href="([^"]+)"', page).group(1).decode()
        assert favicon == f"/static/{manifest['img/favicon.svg']}"
        status, headers, _ = _get(base + favicon)
        assert status == 200 and headers["Content-Type"].startswith("image/svg")
        status, headers, body = _get(f"{base}/static/{plotly}", **{"Accept-Encoding": "gzip"})
        assert status == 200 and headers.get("Content-Encoding") == "gzip", headers
        assert len(body) < 2_000_000, len(body)
        cache = headers["Cache-Control"]
        assert "immutable" in cache and int(re.search(r"max-age=(\d+)", cache).group(1)) >= ONE_YEAR_S
    except Exception as exc:
        raise AssertionError(f"{exc}\n{server.log()}") from exc
    finally:
        server.stop()
