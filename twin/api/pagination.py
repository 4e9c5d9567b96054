"""Pagination of every API list: ``?page=N&page_size=M`` (50 by default, at most 200)."""

from __future__ import annotations

from rest_framework.pagination import PageNumberPagination


class ApiPagination(PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200
