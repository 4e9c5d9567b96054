"""What the bench scripts that drive a real server share: a free port and daphne started on it,
waited for until it answers HTTP. Not a benchmark itself (``make bench`` skips ``_*.py``)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_daphne(env: dict[str, str], port: int, timeout_s: float = 60.0) -> subprocess.Popen:
    """daphne serving the project on 127.0.0.1:``port`` once /login/ answers; exits the bench
    with the server's last output if it does not come up."""
    server = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "twin.asgi:application"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and server.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=2) as answer:
                if answer.status == 200:
                    return server
        except (urllib.error.URLError, OSError):
            time.sleep(0.2)
    server.kill()
    raise SystemExit(f"daphne did not start:\n{server.stderr.read()[-2000:]}")
