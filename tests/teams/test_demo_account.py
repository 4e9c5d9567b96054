"""The public demo account (its password is published): ``demo_seed`` creates it only in
embedded mode unless asked, and ``check --deploy`` fails while it can log in, or while the
secret key is docker-compose.yml's placeholder."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.core.checks import Error
from django.core.management import CommandError, call_command
from django.core.management.base import SystemCheckError

from teams.checks import check_no_demo_account_with_its_published_password
from teams.services import DEMO_PASSWORD, DEMO_USERNAME
from twin.checks import PLACEHOLDER_SECRET_KEYS, check_secret_key_is_not_a_placeholder

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("embedded", "debug"), [(False, True), (True, False)])
def test_demo_seed_refuses_the_demo_account_outside_embedded_mode(catalog_db, settings, embedded, debug):
    from django.contrib.auth import get_user_model

    settings.EMBEDDED_MODE, settings.DEBUG = embedded, debug
    with pytest.raises(CommandError, match="--with-demo-user"):
        call_command("demo_seed", verbosity=0)
    assert not get_user_model().objects.filter(username=DEMO_USERNAME).exists()


@pytest.mark.slow
def test_demo_seed_creates_it_when_asked_and_check_deploy_then_fails(catalog_db, settings):
    from django.contrib.auth import get_user_model

    settings.EMBEDDED_MODE, settings.DEBUG = False, False
    call_command("demo_seed", "--with-demo-user", verbosity=0)
    demo = get_user_model().objects.get(username=DEMO_USERNAME)
    errors = check_no_demo_account_with_its_published_password(None)
    assert [e.id for e in errors] == ["teams.E001"] and isinstance(errors[0], Error)
    with pytest.raises(SystemCheckError, match=r"teams\.E001"):
        call_command("check", deploy=True, fail_level="ERROR")
    demo.set_password("something-else-789")
    demo.save()
    assert check_no_demo_account_with_its_published_password(None) == []
    demo.set_password(DEMO_PASSWORD)
    demo.is_active = False
    demo.save()
    assert check_no_demo_account_with_its_published_password(None) == []


def test_check_deploy_fails_on_the_compose_files_placeholder_secret_key(settings):
    compose = (ROOT / "docker-compose.yml").read_text(encoding="utf-8")
    placeholder = re.search(r"SECRET_KEY: \$\{SECRET_KEY:-([^}]+)\}", compose).group(1)
    assert placeholder in PLACEHOLDER_SECRET_KEYS
    settings.SECRET_KEY = placeholder
    errors = check_secret_key_is_not_a_placeholder(None)
    assert [e.id for e in errors] == ["twin.E003"] and isinstance(errors[0], Error)
    settings.SECRET_KEY = "x" * 60
    assert check_secret_key_is_not_a_placeholder(None) == []
