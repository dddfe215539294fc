"""Graders: the protocol, result models and built-in graders."""
