"""Under pytest-xdist, each worker process gets Redis databases and a channel-layer prefix of
its own, so parallel sessions never share a broker queue or a channel group: a Celery worker
started by one session must not take another session's tasks (whose runs live in another test
database), and live messages must not cross.

Loaded with ``-p tests.xdist_services`` (pyproject's addopts), i.e. before pytest-django reads
the settings, which is when ``REDIS_URL`` is read. xdist names its workers ``gw0``, ``gw1``…
in ``PYTEST_XDIST_WORKER`` before they start. Worker n uses REDIS_URL's database + 2(n+1)
(the browser tests' servers take the next one: tests/e2e/conftest.py); a session without
xdist keeps REDIS_URL as it is.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit


def _isolate() -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    url = os.environ.get("REDIS_URL", "").strip()
    if not worker.startswith("gw") or not url:
        return
    n = int(worker.removeprefix("gw"))
    parts = urlsplit(url)
    db = int(parts.path.strip("/") or 0)
    os.environ["REDIS_URL"] = urlunsplit(parts._replace(path=f"/{(db + 2 * (n + 1)) % 16}"))
    os.environ["CHANNELS_PREFIX"] = f"{os.environ.get('CHANNELS_PREFIX', 'twin')}-{worker}"


_isolate()
