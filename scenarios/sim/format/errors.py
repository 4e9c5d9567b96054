"""The scenario error: what every check of the scenario format raises.

It is a :class:`utilities.errors.InputError`, the error of the bounded YAML loader
(``utilities.yamlsafe``), so ``except InputError`` catches a file that is not YAML and a
scenario that is not valid alike; the helpers that keep messages one short line
(``preview``, ``clip_message``) live beside that error in ``utilities.errors``.
"""

from __future__ import annotations

from utilities.errors import InputError


class ScenarioError(InputError):
    """A scenario is malformed; the message names the field and the rule in one line."""


class Cancelled(Exception):
    """Raised by a core's progress callback to stop the computation (the run was cancelled).

    Every core's ``on_progress(fraction, message)`` may raise it; the core lets it propagate,
    so the caller unwinds at the next callback. It is not a ``ValueError``: no core mistakes a
    stop request for bad input.
    """
