"""``manage.py simulate FILE`` on every file of the hostile corpus (tests/corpus/scenarios/).

Each file runs in a process of its own with the embedded settings (SQLite in a temporary
TWIN_VAR_DIR, no DATABASE_URL/REDIS_URL) migrated and given the catalog once. Every file but the
base must fail with exactly one stderr line naming the field, no traceback, within the CPU and
memory limits below. Two run at a time.

The processes are forked, one per file, by ``simulate_forks.py``, which has set Django up and
loaded the command as ``manage.py`` does before it reads a file; so a file costs its own work
(~0.3 s) instead of the interpreter's and Django's start-up too (~2 s), and ``os.wait4`` reports
that child's CPU seconds and peak RSS alone (the RSS counts the pages it shares with its
parent, which are what a process of its own would have loaded).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.corpus.hostile import FILE_CASES, Case, corpus_files

ROOT = Path(__file__).resolve().parents[2]
FORKS = Path(__file__).with_name("simulate_forks.py")
#: CPU seconds a refusal may take (the command's work after Django's start-up); CPU rather than
#: wall time because the 2 shared cores make wall time depend on the neighbours.
CPU_LIMIT_S = 3.0
#: Wall-clock seconds after which a child counts as hung and is killed.
HANG_LIMIT_S = 60.0
#: Peak resident memory of one child (Django, numpy and scipy alone are ~110 MB).
RSS_LIMIT_MB = 300
PARALLEL = 2

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


def simulate_all(env: dict[str, str], paths: list[Path]) -> list[Outcome]:
    """``manage.py simulate path`` for each path, in order, each in a forked process of its own."""
    with tempfile.TemporaryDirectory() as tmp:
        requests = [
            {
                "path": str(path),
                "stdout": f"{tmp}/{i}.out",
                "stderr": f"{tmp}/{i}.err",
                "hang_s": HANG_LIMIT_S,
            }
            for i, path in enumerate(paths)
        ]
        process = subprocess.run(
            [sys.executable, str(FORKS)],
            input="".join(json.dumps(r) + "\n" for r in requests),
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=HANG_LIMIT_S * (len(paths) + 1),
        )
        reports = [json.loads(line) for line in process.stdout.splitlines() if line.strip()]
        assert len(reports) == len(paths), process.stderr[-3000:]
        return [
            Outcome(
                returncode=report["returncode"],
                stdout=Path(request["stdout"]).read_text("utf-8", "replace"),
                stderr=Path(request["stderr"]).read_text("utf-8", "replace"),
                cpu_s=report["cpu_s"],
                wall_s=report["wall_s"],
                max_rss_mb=report["max_rss_kib"] / 1024,  # KiB on Linux
                killed=report["killed"],
            )
            for request, report in zip(requests, reports, strict=True)
        ]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> dict[str, Outcome]:
    """Every corpus file's outcome, run two at a time; prints the run's timing summary."""
    env = embedded_env(tmp_path_factory.mktemp("twin-var"))
    manage(env, "shell", "-c", SEED)
    files = corpus_files(tmp_path_factory.mktemp("corpus-generated"))
    started = time.monotonic()
    shares = [files[i::PARALLEL] for i in range(PARALLEL)]
    results: dict[str, Outcome] = {}

    def run_share(share):
        for (case, _), outcome in zip(share, simulate_all(env, [path for _, path in share]), strict=True):
            results[case.file] = outcome

    threads = [threading.Thread(target=run_share, args=(share,)) for share in shares]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == len(files), "a share of the corpus did not run"
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
