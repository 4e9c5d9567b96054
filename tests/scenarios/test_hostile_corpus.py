"""``manage.py simulate FILE`` on every file of the hostile corpus (tests/corpus/scenarios/).

Each file runs in its own process, as a user would run it, with the embedded settings (SQLite in
a temporary TWIN_VAR_DIR, no DATABASE_URL/REDIS_URL) migrated and given the catalog once. Every
file but the base must fail with exactly one stderr line naming the field, no traceback, within
the CPU and memory limits below. Two run at a time.

The child is started by a small forking wrapper that reports the child's ``os.wait4`` usage:
Linux carries the peak RSS of the process that spawned an exec'd program into its
``ru_maxrss``, so measured straight from pytest (hundreds of MB by then) every child would
look as large as pytest.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.corpus.hostile import FILE_CASES, Case, corpus_files

ROOT = Path(__file__).resolve().parents[2]
#: CPU seconds a refusal may take, Django's start-up (~2 s) included; CPU rather than wall time
#: because the 2 shared cores make wall time depend on the neighbours.
CPU_LIMIT_S = 5.0
#: Wall-clock seconds after which a child counts as hung and is killed.
HANG_LIMIT_S = 60.0
#: Peak resident memory of one child (Django, numpy and scipy alone are ~110 MB).
RSS_LIMIT_MB = 300
PARALLEL = 2
#: Forks ``argv[2:]``, waits for it and writes its CPU seconds and peak RSS (KiB) to ``argv[1]``.
WRAPPER = (
    "import os, sys\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    os.execv(sys.argv[2], sys.argv[2:])\n"
    "_, status, usage = os.wait4(pid, 0)\n"
    "open(sys.argv[1], 'w').write(f'{usage.ru_utime + usage.ru_stime} {usage.ru_maxrss}')\n"
    "code = os.waitstatus_to_exitcode(status)\n"
    "sys.exit(code if code >= 0 else 128 - code)\n"
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
#: One process migrates the embedded database and imports the catalog (simulate reads it).
SEED = (
    "from django.core.management import call_command\n"
    "call_command('migrate', '--noinput', verbosity=0)\n"
    "call_command('catalog', 'import', verbosity=0)\n"
)


@dataclass(frozen=True)
class Outcome:
    """How one ``manage.py simulate`` run ended."""

    returncode: int
    stdout: str
    stderr: str
    cpu_s: float
    wall_s: float
    max_rss_mb: float
    killed: bool


def embedded_env(var_dir: Path) -> dict[str, str]:
    """This environment minus the service switches: the embedded settings in ``var_dir``."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "CHANNELS_PREFIX")}
    env.update(
        DJANGO_SETTINGS_MODULE="twin.settings",
        TWIN_VAR_DIR=str(var_dir),
        PYTHONIOENCODING="utf-8",
        LOG_LEVEL="WARNING",
    )
    return env


def manage(env: dict[str, str], *args: str) -> None:
    result = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    if result.returncode:
        raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")


def simulate(env: dict[str, str], path: Path) -> Outcome:
    """Run ``manage.py simulate path``; its status, output and rusage (CPU, peak RSS)."""
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        tempfile.TemporaryDirectory() as tmp,
    ):
        usage_file = Path(tmp) / "usage"
        args = [
            sys.executable,
            "-c",
            WRAPPER,
            str(usage_file),
            sys.executable,
            "manage.py",
            "simulate",
            str(path),
        ]
        started = time.monotonic()
        process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=out, stderr=err, start_new_session=True)
        killer = threading.Timer(HANG_LIMIT_S, lambda: os.killpg(process.pid, signal.SIGKILL))
        killer.start()
        try:
            returncode = process.wait()
        finally:
            killer.cancel()
        wall_s = time.monotonic() - started
        cpu_s, max_rss_kib = (
            (float(v) for v in usage_file.read_text().split()) if usage_file.exists() else (0, 0)
        )
        out.seek(0)
        err.seek(0)
        return Outcome(
            returncode=returncode,
            stdout=out.read().decode("utf-8", "replace"),
            stderr=err.read().decode("utf-8", "replace"),
            cpu_s=cpu_s,
            wall_s=wall_s,
            max_rss_mb=max_rss_kib / 1024,  # KiB on Linux
            killed=wall_s >= HANG_LIMIT_S,
        )


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> dict[str, Outcome]:
    """Every corpus file's outcome, run two at a time; prints the run's timing summary."""
    env = embedded_env(tmp_path_factory.mktemp("twin-var"))
    manage(env, "shell", "-c", SEED)
    files = corpus_files(tmp_path_factory.mktemp("corpus-generated"))
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=PARALLEL) as pool:
        results = dict(
            zip([c.file for c, _ in files], pool.map(lambda f: simulate(env, f[1]), files), strict=True)
        )
    total = time.monotonic() - started
    refused = {name: o for name, o in results.items() if name != "base.yaml"}
    slowest = max(refused.items(), key=lambda item: item[1].cpu_s)
    largest = max(refused.items(), key=lambda item: item[1].max_rss_mb)
    print(
        f"\nhostile corpus: {len(results)} files in {total:.1f} s wall ({PARALLEL} at a time); "
        f"slowest refusal {slowest[0]} {slowest[1].cpu_s:.2f} s CPU / {slowest[1].wall_s:.2f} s wall; "
        f"largest refusal {largest[0]} {largest[1].max_rss_mb:.0f} MB peak RSS; "
        f"base {results['base.yaml'].cpu_s:.2f} s CPU, {results['base.yaml'].max_rss_mb:.0f} MB"
    )
    return results


REFUSED = [c for c in FILE_CASES if c.expected]


def test_hostile_corpus_has_seventy_files_and_the_base():
    assert len(FILE_CASES) >= 70 and FILE_CASES[0].file == "base.yaml" and not FILE_CASES[0].expected


@pytest.mark.parametrize("case", REFUSED, ids=[c.file for c in REFUSED])
def test_simulate_refuses_hostile_file_in_one_line(outcomes, case: Case):
    outcome = outcomes[case.file]
    assert not outcome.killed, f"hung: killed after {HANG_LIMIT_S:g} s"
    assert "Traceback" not in outcome.stderr + outcome.stdout, outcome.stderr[-3000:]
    assert outcome.returncode != 0
    assert outcome.stderr.count("\n") == 1 and outcome.stderr.endswith("\n"), outcome.stderr[:2000]
    assert outcome.stderr.startswith(f"CommandError: {case.expected}"), outcome.stderr
    assert outcome.stdout == ""
    assert outcome.cpu_s < CPU_LIMIT_S, f"{outcome.cpu_s:.2f} s CPU"
    assert outcome.max_rss_mb < RSS_LIMIT_MB, f"{outcome.max_rss_mb:.0f} MB"


def test_simulate_accepts_the_base_file(outcomes):
    outcome = outcomes["base.yaml"]
    assert outcome.returncode == 0, outcome.stderr[-3000:]
    assert outcome.stderr == "" and "gpt-1.3b-32gpu: 32 GPUs" in outcome.stdout
    assert outcome.max_rss_mb < RSS_LIMIT_MB


@pytest.mark.parametrize("error", [RecursionError, MemoryError])
def test_simulate_turns_a_last_resort_error_into_one_line(monkeypatch, error):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    def explode(path):
        raise error()

    monkeypatch.setattr("scenarios.management.commands.simulate.load_scenarios", explode)
    with pytest.raises(
        CommandError, match=rf"^file: too deeply nested or too large to read \({error.__name__}\)$"
    ):
        call_command("simulate", "any.yaml")
