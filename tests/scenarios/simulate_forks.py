"""Run ``manage.py simulate FILE`` for many files, each in a process of its own, without paying
Python's and Django's start-up once per file (the hostile corpus test: ~2 s of CPU each).

This process sets Django up and imports the ``simulate`` command, as ``manage.py`` does before it
reads a file, then for each request on stdin forks a child that runs the command's entry point
(``execute_from_command_line``) on the file, with its stdout and stderr in the files named, an
alarm that kills it past its wall-clock limit, and reports on stdout, one JSON line per file, how
the child ended and what it used (``os.wait4``: CPU seconds and peak RSS of that child alone).

Requests are JSON lines ``{"path", "stdout", "stderr", "hang_s"}``; run as
``python tests/scenarios/simulate_forks.py`` from the project root, with the environment the
command should see.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import traceback


def _child(path: str, stdout: str, stderr: str, hang_s: float) -> None:
    """Become ``manage.py simulate path`` (never returns)."""
    code = 1
    try:
        for fd, name in ((1, stdout), (2, stderr)):
            target = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(target, fd)
            os.close(target)
        signal.alarm(max(int(hang_s), 1))
        from django.core.management import execute_from_command_line

        execute_from_command_line(["manage.py", "simulate", path])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # what the interpreter would print for an uncaught error
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _serve(request: dict) -> dict:
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(request["path"], request["stdout"], request["stderr"], request["hang_s"])
    _, status, usage = os.wait4(pid, 0)
    killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGALRM
    return {
        "returncode": os.waitstatus_to_exitcode(status),
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "max_rss_kib": usage.ru_maxrss,
        "wall_s": time.monotonic() - started,
        "killed": killed,
    }


def main() -> None:
    sys.path.insert(0, os.getcwd())
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "twin.settings")
    import django

    django.setup()
    from django.db import connections

    import scenarios.management.commands.simulate  # noqa: F401  (what manage.py loads first)

    connections.close_all()  # a child opens its own
    sys.stdout.flush()
    for line in sys.stdin:
        if line.strip():
            sys.stdout.write(json.dumps(_serve(json.loads(line))) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
