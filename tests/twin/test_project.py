"""Project glue: migrations complete, both settings modes load, admin pages render, compose agrees."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from django.apps import apps
from django.contrib import admin
from django.core.management import call_command
from django.urls import reverse

ROOT = Path(__file__).resolve().parents[2]


def test_migrations_are_complete(db):
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)


def settings_in_subprocess(env: dict[str, str]) -> dict:
    """Load twin.settings in a fresh interpreter with exactly these variables set."""
    code = (
        "import json, django; from django.conf import settings; django.setup();"
        "print(json.dumps({'db': settings.DATABASES['default']['ENGINE'],"
        "'name': str(settings.DATABASES['default']['NAME']),"
        "'broker': settings.CELERY_BROKER_URL, 'layer': settings.CHANNEL_LAYERS['default']['BACKEND'],"
        "'embedded': settings.EMBEDDED_MODE, 'debug': settings.DEBUG, 'hosts': settings.ALLOWED_HOSTS,"
        "'options': settings.DATABASES['default'].get('OPTIONS', {}),"
        "'conn_max_age': settings.DATABASES['default']['CONN_MAX_AGE']}, default=str))"
    )
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "REDIS_URL", "DEBUG", "ALLOWED_HOSTS"}
        and not k.startswith("TWIN_DB_POOL")
    }
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**clean, "DJANGO_SETTINGS_MODULE": "twin.settings", **env},
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


@pytest.mark.slow
def test_embedded_settings_need_nothing_but_python():
    s = settings_in_subprocess({})
    assert s["db"] == "django.db.backends.sqlite3"
    assert s["name"].endswith("var/twin.sqlite3")
    assert s["broker"] == "memory://"
    assert s["layer"] == "channels.layers.InMemoryChannelLayer"
    assert s["embedded"] is True


@pytest.mark.slow
def test_postgresql_connections_come_from_a_bounded_pool():
    """Persistent connections leaked one per ASGI thread: a pool per process bounds them (its
    size from TWIN_DB_POOL_MAX), and the pool needs CONN_MAX_AGE 0."""
    url = "postgres://u@db.example:5432/twin"
    s = settings_in_subprocess({"DATABASE_URL": url, "TWIN_DB_POOL_MAX": "7", "TWIN_DB_POOL_TIMEOUT_S": "3"})
    assert s["options"]["pool"] == {"min_size": 0, "max_size": 7, "timeout": 3.0}
    assert s["conn_max_age"] == 0
    unpooled = settings_in_subprocess({"DATABASE_URL": url, "TWIN_DB_POOL_MAX": "0"})
    assert "pool" not in unpooled["options"] and unpooled["conn_max_age"] == 0
    assert "pool" not in settings_in_subprocess({})["options"]  # SQLite: no pool


@pytest.mark.slow
def test_postgres_and_redis_settings_come_from_the_urls():
    s = settings_in_subprocess(
        {
            "DATABASE_URL": "postgres://u@db.example:5432/twin",
            "REDIS_URL": "redis://cache:6379/3",
            "DEBUG": "0",
            "SECRET_KEY": "x" * 50,
            "ALLOWED_HOSTS": "twin.example.org,10.0.0.1",
        }
    )
    assert s["db"] == "django.db.backends.postgresql"
    assert s["name"] == "twin"
    assert s["broker"] == "redis://cache:6379/3"
    assert s["layer"] == "channels_redis.core.RedisChannelLayer"
    assert s["embedded"] is False and s["debug"] is False
    assert s["hosts"] == ["twin.example.org", "10.0.0.1"]


@pytest.mark.slow
def test_insecure_secret_key_is_refused_without_debug():
    env = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY"}}
    out = subprocess.run(
        [sys.executable, "manage.py", "check"],
        env={**env, "DEBUG": "0"},
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.returncode != 0
    assert "SECRET_KEY: set a secret value when DEBUG is off." in out.stderr


def admin_models():
    return [m for m in apps.get_models() if m in admin.site._registry]


@pytest.mark.parametrize("model", admin_models(), ids=lambda m: m._meta.label)
def test_admin_pages_load_for_every_model(admin_client, catalog_db, model):
    opts = model._meta
    changelist = reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
    assert admin_client.get(changelist).status_code == 200
    assert admin_client.get(changelist + "?q=a").status_code == 200
    add = admin_client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_add"))
    read_only = not admin.site._registry[model].has_add_permission(add.wsgi_request)  # axes' logs
    assert add.status_code == (403 if read_only else 200)
    first = model.objects.first()
    if first is not None:
        change = reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[first.pk])
        assert admin_client.get(change).status_code == 200


def test_admin_exports_selected_catalog_rows_as_yaml(admin_client, catalog_db):
    from topology.models import GpuType

    pks = list(GpuType.objects.filter(slug__in=["h100-sxm", "b200"]).values_list("pk", flat=True))
    response = admin_client.post(
        reverse("admin:topology_gputype_changelist"),
        {"action": "export_yaml", "_selected_action": pks},
    )
    document = yaml.safe_load(response.content)
    assert sorted(g["slug"] for g in document["gpus"]) == ["b200", "h100-sxm"]
    assert document["gpus"][0]["sources"]


def test_compose_file_agrees_with_settings_and_makefile():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {"postgres", "redis", "web", "worker"} <= set(services)
    for name in ("postgres", "redis", "web", "worker"):
        assert "healthcheck" in services[name], name
    settings_text = (ROOT / "twin" / "settings.py").read_text()
    read_vars = set(re.findall(r'(?:env_bool|os\.environ\.get)\("([A-Z_]+)"', settings_text))
    for name in ("web", "worker"):
        env = services[name]["environment"]
        assert {"DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DEBUG", "ALLOWED_HOSTS"} <= set(env)
        assert set(env) <= read_vars, f"{name} sets variables the settings never read"
        assert env["DATABASE_URL"].startswith("postgres://") and "@postgres:" in env["DATABASE_URL"]
        assert env["REDIS_URL"].startswith("redis://redis:")
    assert "twin.asgi:application" in str(services["web"]["command"])
    worker_cmd = " ".join(services["worker"]["command"])
    makefile = (ROOT / "Makefile").read_text()
    assert "celery -A twin worker" in worker_cmd
    assert "celery -A twin worker" in makefile
    assert "manage.py catalog import" in str(services["web"]["command"])
    assert "manage.py catalog import" in makefile
    assert "container_name" not in services["worker"], "a fixed name would block --scale worker=N"
    readme = (ROOT / "README.md").read_text()
    for var in ("DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DEBUG", "ALLOWED_HOSTS"):
        assert var in readme, f"README does not document {var}"
