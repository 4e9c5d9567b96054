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
