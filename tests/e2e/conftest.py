"""Browser tests: real servers in subprocesses, driven through Playwright and the system Chromium.

Each mode gets its own throw-away database, seeded through ``manage.py`` exactly as a newcomer
would (migrate, catalog import, one user/team/design), so the servers and the test never share
transactions:

- embedded: ``manage.py serve`` with no REDIS_URL and a temporary TWIN_VAR_DIR (SQLite, in-memory
  broker and channel layer, in-process worker);
- Redis: ``daphne twin.asgi:application`` + ``celery -A twin worker`` on a fresh PostgreSQL
  database (from DATABASE_URL's server) and a Redis database of their own (REDIS_URL's db + 1,
  so a worker of another test session never takes these tasks).

Without Chromium (or PostgreSQL/Redis for the Redis mode) the tests skip with the reason; with
E2E_REQUIRED=1 they fail instead.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.e2e.browser import CHROMIUM_ARGS, chromium_path

ROOT = Path(__file__).resolve().parents[2]
#: Where every browser test leaves its screenshots (1440 px wide), to be looked at.
SHOTS = ROOT / "var" / "screenshots"
PYTHON = sys.executable
BIN = Path(PYTHON).parent
E2E_USER = "e2e"
E2E_PASSWORD = "pw-e2e-twin-1"
E2E_DESIGN = "E2E H100 x16"
E2E_NODES = 16

SEED = f"""
from topology.fabric.generators import generate
from topology.selectors import catalog_load
from topology.services import design_create_from_plan
from teams.services import team_create
from django.contrib.auth import get_user_model
user = get_user_model().objects.create_user({E2E_USER!r}, password={E2E_PASSWORD!r})
team = team_create(name="E2E team", users=[user])
plan = generate("rail-optimized", catalog=catalog_load(), server="dgx-h100", nodes={E2E_NODES})
design_create_from_plan(plan=plan, name={E2E_DESIGN!r}, team=team, user=user)
"""


def e2e_required() -> bool:
    return os.environ.get("E2E_REQUIRED", "").strip().lower() in {"1", "true", "yes", "on"}


def skip_or_fail(reason: str) -> None:
    """Skip with ``reason`` on a laptop; fail loudly when CI requires the browser tests."""
    if e2e_required():
        pytest.fail(f"E2E_REQUIRED=1 but {reason}")
    pytest.skip(reason)


def installed_chromium() -> str:
    """The system Chromium's path; skips (or fails when E2E_REQUIRED=1) if it is missing."""
    path = chromium_path()
    if not Path(path).exists():
        skip_or_fail(f"no Chromium at {path} (set CHROMIUM_PATH or apt-get install chromium)")
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def base_env(**extra: str) -> dict[str, str]:
    """The environment of a server subprocess: this one minus the service switches, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "CHANNELS_PREFIX")}
    env.update({"DJANGO_SETTINGS_MODULE": "twin.settings", "PYTHONUNBUFFERED": "1", "LOG_LEVEL": "WARNING"})
    env.update(extra)
    return env


def manage(env: dict[str, str], *args: str, timeout: float = 300) -> None:
    result = subprocess.run(
        [PYTHON, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )
    if result.returncode:
        raise RuntimeError(f"manage.py {' '.join(args[:2])} failed:\n{result.stdout}\n{result.stderr}")


def seed(env: dict[str, str]) -> None:
    """Migrate, import the catalog, and create the e2e user, team and design."""
    manage(env, "migrate", "--noinput")
    manage(env, "catalog", "import")
    manage(env, "shell", "-c", SEED)


class Server:
    """A subprocess whose output goes to a log file (shown when a test fails)."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], log_dir: Path):
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        self._log = open(self.log_path, "w", encoding="utf-8")  # noqa: SIM115 (closed in stop)
        self.process = subprocess.Popen(
            args, cwd=ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(encoding="utf-8", errors="replace")[-6000:]

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        self._log.close()


def wait_for_http(url: str, server: Server, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"{server.name} exited ({server.process.returncode}):\n{server.log()}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status < 500:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.2)
    raise RuntimeError(f"{server.name} did not answer {url} in {timeout_s:g} s:\n{server.log()}")


class LiveSite:
    """A running site: its base URL and the servers behind it (for logs on failure)."""

    def __init__(self, base_url: str, servers: list[Server]):
        self.base_url = base_url
        self.servers = servers

    def logs(self) -> str:
        return "\n".join(f"----- {s.name} -----\n{s.log()}" for s in self.servers)


@contextmanager
def embedded_site(tmp_path: Path, setup: str | None = None) -> Iterator[LiveSite]:
    """``manage.py serve`` with SQLite in a temporary TWIN_VAR_DIR and no Redis; ``setup`` is
    Python run in ``manage.py shell`` after the seed (more users, say)."""
    env = base_env(TWIN_VAR_DIR=str(tmp_path / "var"))
    seed(env)
    if setup:
        manage(env, "shell", "-c", setup)
    port = free_port()
    server = Server("serve", [PYTHON, "manage.py", "serve", "--port", str(port)], env, tmp_path)
    try:
        wait_for_http(f"http://127.0.0.1:{port}/login/", server)
        yield LiveSite(f"http://127.0.0.1:{port}", [server])
    finally:
        server.stop()


def shot(page, name: str) -> None:
    """A full-page screenshot ``var/screenshots/<name>.png``."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def _redis_url_for_e2e(redis_url: str) -> str:
    parts = urlsplit(redis_url)
    db = int(parts.path.strip("/") or 0)
    return urlunsplit(parts._replace(path=f"/{(db + 1) % 16}"))


@contextmanager
def postgres_database(database_url: str) -> Iterator[str]:
    """A fresh database on DATABASE_URL's server, dropped afterwards; yields its URL."""
    import psycopg

    parts = urlsplit(database_url)
    name = f"twin_e2e_{uuid.uuid4().hex[:10]}"
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def redis_site(tmp_path: Path, database_url: str, redis_url: str) -> Iterator[LiveSite]:
    """daphne + a Celery worker on PostgreSQL and Redis."""
    with postgres_database(database_url) as db_url:
        env = base_env(
            DATABASE_URL=db_url,
            REDIS_URL=_redis_url_for_e2e(redis_url),
            CHANNELS_PREFIX=f"twin-e2e-{uuid.uuid4().hex[:6]}",
            TWIN_VAR_DIR=str(tmp_path / "var"),
        )
        seed(env)
        port = free_port()
        servers = [
            Server(
                "daphne",
                [str(BIN / "daphne"), "-b", "127.0.0.1", "-p", str(port), "twin.asgi:application"],
                env,
                tmp_path,
            ),
            Server(
                "worker",
                [
                    str(BIN / "celery"),
                    "-A",
                    "twin",
                    "worker",
                    "--pool",
                    "solo",
                    "--loglevel",
                    "WARNING",
                    "--without-mingle",
                    "--without-gossip",
                    "-n",
                    f"e2e-{port}@%h",
                ],
                env,
                tmp_path,
            ),
        ]
        try:
            wait_for_http(f"http://127.0.0.1:{port}/login/", servers[0])
            yield LiveSite(f"http://127.0.0.1:{port}", servers)
        finally:
            for server in servers:
                server.stop()


@pytest.fixture(scope="session")
def browser():
    path = installed_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def _page(browser, width: int, height: int):
    """A page in a fresh context of the given viewport that collects its JavaScript errors."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.js_errors = errors
    return context, page


@pytest.fixture
def page(browser):
    context, page = _page(browser, 1400, 1000)
    yield page
    context.close()


@pytest.fixture
def wide(browser):
    """A 1440-px-wide page (the screenshots' width); a module whose tests need a signed-in page
    overrides it with ``wide(wide, site)`` that logs in."""
    context, page = _page(browser, 1440, 900)
    yield page
    context.close()
