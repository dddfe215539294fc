"""The code sandbox's child side: what runs inside the sandbox, next to the solution.

Standard library only, and never imports ``openjudge``: the sandbox starts the
interpreter with ``-I -S`` and imports this directory as the top-level package
``harness``. The grader imports :mod:`.values` (to decode what the child sends) and
:mod:`.confine` (whose seccomp program it tests).
"""
