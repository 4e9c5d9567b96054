"""The web scenario import (``/scenarios/import/``) on every hostile corpus file.

Each upload must end in a 4xx page whose form errors name the field (or the file), quickly;
never a 500. The import reads files through the bounded loader (``utilities.yamlsafe``);
should that ever regress, a file could stall or exhaust the server, so each request runs in a
forked child under a memory and CPU ceiling (the test process and its neighbours stay safe) and
reports back through a pipe.
"""

from __future__ import annotations

import html
import json
import os
import re
import resource
import select
import signal
import time
from dataclasses import dataclass

import pytest
from django.urls import reverse

from tests.corpus.hostile import FILE_CASES, Case, corpus_files

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

#: CPU seconds a refusal may take in the server (the same budget as the CLI's, less start-up).
CPU_LIMIT_S = 5
#: Virtual memory the child may add to the test process's before allocations fail.
EXTRA_MEMORY_BYTES = 1024**3
#: Wall seconds after which the child is killed (it is over its CPU budget long before).
HANG_LIMIT_S = 60
#: Files the import accepts by design: it replaces the file's cluster by the chosen design's, so
#: an unknown ``cluster.server`` slug there is never looked up.
ACCEPTED = {"base.yaml", "unknown-server-slug.yaml"}
_FIELD = re.compile(r'data-field="(\w+)"(.*?)(?=<div class="field|</fieldset>)', re.S)
_ERRORS = re.compile(r'<ul class="errorlist[^"]*"[^>]*>(.*?)</ul>', re.S)


@dataclass(frozen=True)
class Reply:
    """What the guarded request gave: a response, or why the child could not give one."""

    status: int | None
    page: str
    cpu_s: float
    failure: str  # "" when the view answered


def _virtual_memory_bytes() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def guarded_post(client, url: str, data: dict) -> Reply:
    """``client.post(url, data)`` in a forked child with memory and CPU ceilings."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: answer through the pipe, never return into pytest
        try:
            os.close(read_end)
            limit = _virtual_memory_bytes() + EXTRA_MEMORY_BYTES
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # SIGXCPU must not dump a core
            resource.setrlimit(resource.RLIMIT_CPU, (CPU_LIMIT_S + 1, CPU_LIMIT_S + 2))
            response = client.post(url, data)
            body = response.content.decode("utf-8", "replace")
            payload = {"status": response.status_code, "page": body[:100_000], "failure": ""}
        except BaseException as exc:  # any escape is the finding
            payload = {"status": None, "page": "", "failure": f"{type(exc).__name__}: {str(exc)[:300]}"}
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(json.dumps(payload).encode())
        os._exit(0)
    os.close(write_end)
    chunks, deadline = [], time.monotonic() + HANG_LIMIT_S
    with os.fdopen(read_end, "rb") as pipe:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([pipe], [], [], 1.0)
            if ready:
                chunk = os.read(pipe.fileno(), 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
        else:
            os.kill(pid, signal.SIGKILL)
    _, status, usage = os.wait4(pid, 0)
    cpu_s = usage.ru_utime + usage.ru_stime
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        return Reply(None, "", cpu_s, f"killed by {name} after {cpu_s:.1f} s CPU")
    payload = json.loads(b"".join(chunks) or b'{"status": null, "page": "", "failure": "no answer"}')
    return Reply(payload["status"], payload["page"], cpu_s, payload["failure"])


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return dict((case.file, path) for case, path in corpus_files(tmp_path_factory.mktemp("generated")))


def form_errors(page: str) -> dict[str, str]:
    """Each form field's error text on the import page."""
    return {name: html.unescape(" ".join(_ERRORS.findall(block))) for name, block in _FIELD.findall(page)}


def _field(case: Case) -> str:
    return case.expected.split(":", 1)[0]


CASES = [pytest.param(c, id=c.file) for c in FILE_CASES]


@pytest.mark.parametrize("case", CASES)
def test_scenario_import_refuses_hostile_file_with_a_4xx_naming_the_field(client, user, design, files, case):
    client.force_login(user)
    with open(files[case.file], "rb") as upload:
        reply = guarded_post(
            client, reverse("scenarios:scenario-import"), {"design": design.pk, "file": upload}
        )
    assert not reply.failure, reply.failure
    assert reply.cpu_s < CPU_LIMIT_S, f"{reply.cpu_s:.1f} s CPU"
    if case.file in ACCEPTED:
        assert reply.status == 302
        return
    assert reply.status is not None and 400 <= reply.status < 500, reply.status
    errors = {name: text for name, text in form_errors(reply.page).items() if text}
    field = _field(case)
    text_level = field in ("file", "scenario")  # the text itself: named "file" or "yaml", or on the upload
    named = any(field in text or (text_level and "yaml" in text) for text in errors.values())
    assert named or (text_level and "file" in errors), (field, str(errors)[:500])
