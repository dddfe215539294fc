"""Fixtures shared by the whole suite; ``tests/conftest.py`` makes them available everywhere."""
