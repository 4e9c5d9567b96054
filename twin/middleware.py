"""Project middleware: a page whose database is unreachable answers 503 with a short page
(the API answers its own JSON 503: ``twin.api.errors``), not a 500 and its traceback."""

from __future__ import annotations

import logging

from django.db import InterfaceError, OperationalError
from django.http import HttpResponse
from django.template.loader import render_to_string

from twin.api.errors import DATABASE_RETRY_AFTER_S
from utilities.errors import clip_message

logger = logging.getLogger(__name__)


class DatabaseUnavailableMiddleware:
    """A view that cannot reach the database (down, or the pool's timeout passed): 503."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, OperationalError | InterfaceError):
            return None
        logger.warning("%s: database unavailable: %s", request.path[:120], clip_message(str(exception)))
        # A standalone page: the base template's context processors would ask the database.
        response = HttpResponse(render_to_string("503.html"), status=503)
        response["Retry-After"] = str(DATABASE_RETRY_AFTER_S)
        return response
