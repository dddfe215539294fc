"""Test doubles: an in-process function model and a local OpenAI-compatible judge server."""
