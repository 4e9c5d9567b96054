"""Django settings for Cluster Twin.

Everything configurable comes from environment variables with embedded defaults, so a fresh
clone runs with nothing but Python (SQLite, in-memory broker and channel layer). README lists
every variable. Setting ``REDIS_URL`` switches Celery and Channels to Redis; setting
``DATABASE_URL`` switches the database.
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
import plotly

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("TWIN_VAR_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool) -> bool:
    """Read a boolean environment variable ("1", "true", "yes", "on" are true)."""
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


DEBUG = env_bool("DEBUG", True)
# The embedded default key only serves local development; a system check refuses it when
# DEBUG is off (see twin/checks.py).
INSECURE_DEFAULT_SECRET_KEY = "django-insecure-cluster-twin-local-development-only"
SECRET_KEY = os.environ.get("SECRET_KEY", INSECURE_DEFAULT_SECRET_KEY)
# twin.E002 already refuses the embedded key; Django's own weak-key warning would say it twice.
SILENCED_SYSTEM_CHECKS = ["security.W009"] if SECRET_KEY == INSECURE_DEFAULT_SECRET_KEY else []
ALLOWED_HOSTS = [
    h.strip() for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost").split(",") if h.strip()
]
CSRF_TRUSTED_ORIGINS = [o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()]

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "channels",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "twin",
    "teams",
    "topology",
    "scenarios",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "twin.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "teams.context_processors.teams",
            ],
        },
    },
]
WSGI_APPLICATION = None
ASGI_APPLICATION = "twin.asgi.application"

DATABASE_URL = os.environ.get("DATABASE_URL", "").strip()
if not DATABASE_URL:
    VAR_DIR.mkdir(parents=True, exist_ok=True)  # the embedded SQLite file lives here
    DATABASE_URL = f"sqlite:///{VAR_DIR / 'twin.sqlite3'}"
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the web process read while a worker writes a run's results.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "topology:design-list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# plotly.js ships inside the plotly Python package: serve it from there (no CDN, no copy).
STATICFILES_DIRS = [
    BASE_DIR / "static",
    ("vendor/plotly", Path(plotly.__file__).resolve().parent / "package_data"),
]
STATIC_ROOT = VAR_DIR / "staticfiles"
# Serve static files straight from the apps and static/ (no collectstatic needed for `make run`).
WHITENOISE_USE_FINDERS = True

# --- Static files collected for production (STATIC_COLLECTED=1, set by the Docker image) -------
# collectstatic then writes every file under a content-hashed name with a gzip twin (plotly.js:
# 4.8 MB -> ~1.4 MB), and WhiteNoise serves those compressed with a one-year immutable
# Cache-Control. Off by default: `make run` and the tests read the source files through the
# finders, so an edited file is served at once and no manifest can go stale.
STATIC_COLLECTED = env_bool("STATIC_COLLECTED", False)
if STATIC_COLLECTED:
    STORAGES = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    }
    WHITENOISE_USE_FINDERS = False

# --- Redis: one URL switches Celery and Channels from embedded mode to shared services --------
REDIS_URL = os.environ.get("REDIS_URL", "").strip()
EMBEDDED_MODE = not REDIS_URL

if EMBEDDED_MODE:
    CELERY_BROKER_URL = "memory://"
    CELERY_RESULT_BACKEND = "cache+memory://"
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
else:
    CELERY_BROKER_URL = REDIS_URL
    CELERY_RESULT_BACKEND = REDIS_URL
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL], "prefix": os.environ.get("CHANNELS_PREFIX", "twin")},
        }
    }

# A task computing a run or a chunk refreshes its lease (heartbeat) this often; started work
# whose lease is older than TWIN_RUN_STALE_S is queued again by the reaper (its worker was
# killed), at most TWIN_RUN_MAX_ATTEMPTS starts in all. Queued work is never judged
# (docs/live-runs.md, "Busy queues and killed workers").
TWIN_RUN_HEARTBEAT_S = float(os.environ.get("TWIN_RUN_HEARTBEAT_S", "5"))
TWIN_RUN_STALE_S = float(os.environ.get("TWIN_RUN_STALE_S", "60"))
TWIN_RUN_MAX_ATTEMPTS = int(os.environ.get("TWIN_RUN_MAX_ATTEMPTS", "3"))

# The run kinds this installation computes (scenarios/kinds/: one module each, exposing KIND).
# TWIN_EXTRA_RUN_KINDS (comma separated module paths) adds plug-in kinds without editing this file.
TWIN_RUN_KINDS = [
    "scenarios.kinds.step",
    "scenarios.kinds.sweep",
    "scenarios.kinds.search",
    "scenarios.kinds.failures",
    "scenarios.kinds.power",
    *[m.strip() for m in os.environ.get("TWIN_EXTRA_RUN_KINDS", "").split(",") if m.strip()],
]

# A message is acknowledged only after its task returned (acks_late), and given back when the
# pool process running it dies (reject_on_worker_lost); one message per process is reserved.
# The Redis broker redelivers a message a dead worker held after the visibility timeout: it
# bounds the wait of work reserved but not started (a redelivered copy of started work finds
# its run or chunk claimed and does nothing, so a short timeout costs no double work). Started
# work is recovered sooner by the reaper (TWIN_RUN_STALE_S).
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("TWIN_CELERY_QUEUE", "celery")
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": float(os.environ.get("TWIN_BROKER_VISIBILITY_TIMEOUT_S", "300"))
}
if EMBEDDED_MODE:
    # The in-memory broker is polled (kombu's default: every second); the in-process worker
    # looks every 0.1 s, so the next run starts at once after the last one ends or is cancelled.
    CELERY_BROKER_TRANSPORT_OPTIONS["polling_interval"] = 0.1

# --- REST API (/api/, docs/api.md) ------------------------------------------------------------
# Largest request body the API reads (413 past it); scenario files themselves stop at 1 MiB.
TWIN_API_MAX_BODY_BYTES = int(os.environ.get("TWIN_API_MAX_BODY_BYTES", str(2 * 1024 * 1024)))
DATA_UPLOAD_MAX_MEMORY_SIZE = TWIN_API_MAX_BODY_BYTES
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",  # scripts: Authorization: Token ...
        "rest_framework.authentication.SessionAuthentication",  # the browser, with CSRF
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": ["twin.api.parsers.BoundedJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PAGINATION_CLASS": "twin.api.pagination.ApiPagination",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "twin.api.errors.api_exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Cluster Twin API",
    "DESCRIPTION": "Designs, scenarios, runs, the hardware catalog and teams (docs/api.md).",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SWAGGER_UI_DIST": "SIDECAR",  # served from the project's static files, no CDN
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "twin.api.schema.add_error_responses",
    ],
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {"daphne": {"level": "WARNING"}},
}

# --- Production (DEBUG=0): HTTPS only, `manage.py check --deploy` clean with the defaults --------
# Behind a TLS-terminating proxy set SECURE_PROXY_SSL_HEADER=HTTP_X_FORWARDED_PROTO,https; for a
# plain-HTTP trial (docker compose on localhost) set SECURE_SSL_REDIRECT=0 SECURE_HSTS_SECONDS=0
# SECURE_COOKIES=0.
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_AGE = int(os.environ.get("SESSION_COOKIE_AGE", str(14 * 24 * 3600)))
if not DEBUG:
    SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", True)
    CSRF_COOKIE_SECURE = env_bool("SECURE_COOKIES", True)
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
    _proxy_header = [p.strip() for p in os.environ.get("SECURE_PROXY_SSL_HEADER", "").split(",") if p.strip()]
    if len(_proxy_header) == 2:
        SECURE_PROXY_SSL_HEADER = tuple(_proxy_header)
