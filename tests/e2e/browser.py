"""How the tests and benchmarks launch Debian's Chromium (Playwright's own browser download does
not work on these machines): the executable and the flags that keep it off the network."""

from __future__ import annotations

import os

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium_path() -> str:
    """The system Chromium (``CHROMIUM_PATH`` overrides ``/usr/bin/chromium``)."""
    return os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
