"""Production settings: `manage.py check --deploy` is clean with the documented variables, a
missing SECRET_KEY is one clear error (once), and every new variable is documented."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
#: What README's configuration table tells an operator to set for production.
PRODUCTION = {"DEBUG": "0", "ALLOWED_HOSTS": "twin.example.org"}


def _check(env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess:
    """``check --deploy`` on an empty database of its own (no demo account a developer seeded)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SECURE_", "SECRET_KEY", "DEBUG"))}
    clean.pop("ALLOWED_HOSTS", None)
    clean.pop("DATABASE_URL", None)
    clean["TWIN_VAR_DIR"] = str(tmp_path)
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        env={**clean, "DJANGO_SETTINGS_MODULE": "twin.settings", **env},
        cwd=ROOT,
        capture_output=True,
        text=True,
    )


def test_check_deploy_is_clean_with_the_documented_production_variables(tmp_path):
    out = _check({**PRODUCTION, "SECRET_KEY": secrets.token_urlsafe(50)}, tmp_path)
    assert out.returncode == 0, out.stderr + out.stdout
    assert "no issues" in out.stdout


def test_a_missing_secret_key_is_one_error_said_once(tmp_path):
    out = _check(PRODUCTION, tmp_path)
    assert out.returncode != 0
    assert out.stderr.count("SECRET_KEY: set a secret value when DEBUG is off.") == 1, out.stderr
    assert "identified 1 issue" in out.stderr and "W009" not in out.stderr, out.stderr


def test_a_weak_secret_key_of_ones_own_still_gets_django_s_warning(tmp_path):
    out = _check({**PRODUCTION, "SECRET_KEY": "short"}, tmp_path)
    assert out.returncode != 0 and "security.W009" in out.stderr, out.stderr


def test_the_production_variables_are_documented_with_their_defaults():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    settings_text = (ROOT / "twin" / "settings.py").read_text(encoding="utf-8")
    read = set(re.findall(r'(?:env_bool|os\.environ\.get)\("([A-Z_]+)"', settings_text))
    for name in (
        "SECURE_SSL_REDIRECT",
        "SECURE_HSTS_SECONDS",
        "SECURE_HSTS_INCLUDE_SUBDOMAINS",
        "SECURE_HSTS_PRELOAD",
        "SECURE_PROXY_SSL_HEADER",
        "SECURE_COOKIES",
        "SESSION_COOKIE_AGE",
    ):
        assert name in read, f"settings do not read {name}"
        assert f"`{name}`" in readme, f"README does not document {name}"
