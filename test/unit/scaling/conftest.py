"""Fixtures shared by the scaling unit tests."""

from .httpserver import server

__all__ = ["server"]
