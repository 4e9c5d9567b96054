"""Logging filters of the project (``LOGGING`` in ``twin/settings.py`` names them)."""

from __future__ import annotations

import logging


class ClientErrorsOneLine(logging.Filter):
    """Drop the traceback of a 4xx response's log record: a 403 or 404 is the client's doing
    (``Forbidden (Permission denied): /designs/3/edit/`` says it all), while a 5xx keeps its
    traceback for whoever debugs the server."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if isinstance(status, int) and 400 <= status < 500:
            record.exc_info = None
            record.exc_text = None
            record.stack_info = None
        return True
