"""Django settings for Cluster Twin.

Everything configurable comes from environment variables with embedded defaults, so a fresh
clone runs with nothing but Python (SQLite, in-memory broker and channel layer). README lists
every variable. Setting ``REDIS_URL`` switches Celery and Channels to Redis; setting
``DATABASE_URL`` switches the database.
"""

from __future__ import annotations

import os
import sys
from datetime import timedelta
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


#: ``manage.py serve`` (what ``make run`` starts) serves the app as its users see it: DEBUG off
#: unless DEBUG=1 asks for it, so a missing page is the site's 404 page and a refusal its 403
#: page, never Django's debug page with settings and a traceback. The test runner and every
#: other command keep DEBUG on by default.
SERVING = sys.argv[1:2] == ["serve"]
DEBUG = env_bool("DEBUG", not SERVING)
# The embedded default key only serves local development; a system check refuses it when
# DEBUG is off (see twin/checks.py).
INSECURE_DEFAULT_SECRET_KEY = "django-insecure-cluster-twin-local-development-only"


def local_secret_key(var_dir: Path) -> str:
    """This machine's own key for ``manage.py serve`` without SECRET_KEY: made once, kept in
    ``var/secret_key`` (readable by its owner only) so sessions survive a restart."""
    path = var_dir / "secret_key"
    if not path.exists():
        import secrets

        var_dir.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(secrets.token_urlsafe(50))
    return path.read_text().strip()


SECRET_KEY = os.environ.get("SECRET_KEY") or (
    local_secret_key(VAR_DIR) if SERVING and not DEBUG else INSECURE_DEFAULT_SECRET_KEY
)
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
    # authtoken stays installed only so teams' hashed_tokens migration can read the verbatim
    # tokens it hashes into knox (its table is empty afterwards; nothing else uses it).
    "rest_framework.authtoken",
    "knox",
    "axes",
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
    # A page that cannot reach the database answers 503 (the API its JSON 503), not a 500.
    "twin.middleware.DatabaseUnavailableMiddleware",
    # Last, as django-axes requires: it answers a locked-out login (see the login block below).
    "axes.middleware.AxesMiddleware",
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

# --- PostgreSQL connection pool (issue 23: persistent connections leaked one per thread) -----
# Under ASGI every sync view runs in a thread of its own, and a persistent connection
# (CONN_MAX_AGE > 0) belongs to its thread: the web process held one connection per thread it
# ever used, past PostgreSQL's max_connections under load. Django's native psycopg pool bounds
# them instead: each process (web or worker) opens at most TWIN_DB_POOL_MAX connections and a
# request waits up to TWIN_DB_POOL_TIMEOUT_S for a free one (then the API answers 503). Plan
# max_connections >= web processes x TWIN_DB_POOL_MAX + worker processes x (concurrency + 1)
# + a few for migrations and psql (README, "Database connections"). Celery workers gain nothing
# from a pool (Celery closes the connections after every task): the compose file sets
# TWIN_DB_POOL_MAX=0 for them. The pool requires CONN_MAX_AGE = 0: a connection goes back to the
# pool at the end of each request.
TWIN_DB_POOL_MIN = int(os.environ.get("TWIN_DB_POOL_MIN", "0"))  # opened on demand, kept idle 10 min
# A one-shot management command (simulate, migrate, catalog import...) is one thread: a pool only
# adds its retries and its timeout to a database that is not there, so it connects directly.
_ONE_SHOT_COMMAND = Path(sys.argv[0]).name == "manage.py" and sys.argv[1:2] not in (["serve"], ["runserver"])
TWIN_DB_POOL_MAX = int(os.environ.get("TWIN_DB_POOL_MAX", "0" if _ONE_SHOT_COMMAND else "10"))
TWIN_DB_POOL_TIMEOUT_S = float(os.environ.get("TWIN_DB_POOL_TIMEOUT_S", "10"))
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # TWIN_DB_POOL_MAX=0: no pool, a connection per request
    # A pooled connection is checked before use, so a restarted PostgreSQL costs no request.
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    if TWIN_DB_POOL_MAX > 0:
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
            "min_size": min(TWIN_DB_POOL_MIN, TWIN_DB_POOL_MAX),
            "max_size": TWIN_DB_POOL_MAX,
            "timeout": TWIN_DB_POOL_TIMEOUT_S,
        }
# --- end of the connection pool block ----------------------------------------------------------
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "topology:design-list"
LOGOUT_REDIRECT_URL = "login"

# --- Login throttling (django-axes; issue 23) --------------------------------------------------
# TWIN_LOGIN_FAILURE_LIMIT failed logins lock the account, and as many from one address lock
# that address (for every account), for TWIN_LOGIN_COOLOFF_MINUTES; the login page then says
# "too many failed logins for this account; try again in N minutes" (HTTP 429). A successful
# login resets the account's count.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # first, as django-axes requires
    "django.contrib.auth.backends.ModelBackend",
]
TWIN_LOGIN_FAILURE_LIMIT = int(os.environ.get("TWIN_LOGIN_FAILURE_LIMIT", "10"))
TWIN_LOGIN_COOLOFF_MINUTES = int(os.environ.get("TWIN_LOGIN_COOLOFF_MINUTES", "15"))
AXES_FAILURE_LIMIT = TWIN_LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = TWIN_LOGIN_COOLOFF_MINUTES / 60  # hours
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # either one over the limit locks
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "teams.views.login_locked_out"
AXES_VERBOSE = False
# Behind N reverse proxies the client's address is the N-th from the right of X-Forwarded-For;
# with none (the default) only REMOTE_ADDR counts, so a client cannot spoof its address.
TWIN_LOGIN_PROXY_COUNT = int(os.environ.get("TWIN_LOGIN_PROXY_COUNT", "0"))
AXES_CLIENT_IP_CALLABLE = "teams.authentication.login_client_address"
# --- end of the login throttling block ---------------------------------------------------------

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
        "teams.authentication.ApiTokenAuthentication",  # scripts: Authorization: Token ... (hashed)
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
# --- API tokens (django-rest-knox; issue 23) ---------------------------------------------------
# Tokens are stored as SHA-512 digests (the secret is shown once, when created), expire after
# TWIN_API_TOKEN_TTL_DAYS (0: never), and are revoked when their user's password changes or they
# log out everywhere (teams/tokens.py).
TWIN_API_TOKEN_TTL_DAYS = float(os.environ.get("TWIN_API_TOKEN_TTL_DAYS", "90"))
REST_KNOX = {
    "TOKEN_TTL": timedelta(days=TWIN_API_TOKEN_TTL_DAYS) if TWIN_API_TOKEN_TTL_DAYS > 0 else None,
    "AUTH_HEADER_PREFIX": "Token",
    "AUTO_REFRESH": False,
}
# --- end of the API tokens block ---------------------------------------------------------------
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
    # A refused or missing page is one line in the log (Django attaches the PermissionDenied or
    # Http404 traceback, which says nothing about the server); a 5xx keeps its traceback.
    "filters": {"client_errors_one_line": {"()": "twin.log_filters.ClientErrorsOneLine"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["client_errors_one_line"]}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {"daphne": {"level": "WARNING"}},
}

# --- Production (DEBUG=0): HTTPS only, `manage.py check --deploy` clean with the defaults --------
# Behind a TLS-terminating proxy set SECURE_PROXY_SSL_HEADER=HTTP_X_FORWARDED_PROTO,https; for a
# plain-HTTP trial (docker compose on localhost) set SECURE_SSL_REDIRECT=0 SECURE_HSTS_SECONDS=0
# SECURE_COOKIES=0.
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_AGE = int(os.environ.get("SESSION_COOKIE_AGE", str(14 * 24 * 3600)))
# `manage.py serve` is plain HTTP on this machine (127.0.0.1 by default): its defaults are
# HTTP's; daphne behind a TLS proxy (the Docker image) keeps HTTPS-only defaults.
_HTTPS_DEFAULT = not SERVING
if not DEBUG:
    SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", _HTTPS_DEFAULT)
    CSRF_COOKIE_SECURE = env_bool("SECURE_COOKIES", _HTTPS_DEFAULT)
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", _HTTPS_DEFAULT)
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "31536000" if _HTTPS_DEFAULT else "0"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
    _proxy_header = [p.strip() for p in os.environ.get("SECURE_PROXY_SSL_HEADER", "").split(",") if p.strip()]
    if len(_proxy_header) == 2:
        SECURE_PROXY_SSL_HEADER = tuple(_proxy_header)
