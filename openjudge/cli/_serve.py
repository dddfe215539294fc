"""``openjudge serve CONFIG``: the reward server's options, and a lazy hand-off to it.

The server lives in :mod:`openjudge.integrations.serve`, the top layer (it serves the
trainers' scorer), above this one: the CLI must not import it (the layer contract in
pyproject.toml). So the command is registered here by the module's *name*, and the module
is imported only when ``serve`` runs: importing :mod:`openjudge.cli` (or running any other
subcommand) never loads the server, aiohttp's web server or prometheus-client, and the CLI
knows the server only through :func:`run_command`'s signature. The options are declared
here, as every subcommand's are.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Mapping

from openjudge.cli._codes import EXIT_INVALID

__all__ = ["HELP", "add_arguments", "run_command"]

HELP = "serve rewards over HTTP to a trainer (OpenRLHF's --reward.remote_url, or any loop)"

SERVER_MODULE = "openjudge.integrations.serve"
"""The server, imported by name when the command runs (see the module docstring)."""

_OPTIONS: dict[str, str] = {
    "host": "host",
    "port": "port",
    "aggregate": "aggregate",
    "on_failure": "on_failure",
    "fallback_score": "fallback_score",
    "max_failure_rate": "max_failure_rate",
    "timeout_s": "timeout_s",
    "max_concurrent_samples": "max_concurrent_samples",
    "max_pending": "max_pending",
    "retry_after_s": "retry_after_s",
    "normalize": "normalize",
    "include_reasons": "include_reasons",
    "judge_cache": "judge_cache",
}
"""Option attribute -> :class:`~openjudge.integrations.serve.ServeSettings` field."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", help="the graders YAML (the same file `openjudge run` reads)")
    parser.add_argument(
        "--host", help="interface to listen on (default 127.0.0.1; any other needs OPENJUDGE_SERVE_TOKEN)"
    )
    parser.add_argument("--port", type=int, help="TCP port (default 8000; 0: any free port)")
    parser.add_argument("--aggregate", help="the aggregator (or grader) whose score is the reward")
    parser.add_argument(
        "--on-failure",
        choices=["drop", "neutral", "fallback"],
        help="what a sample that could not be scored becomes",
    )
    parser.add_argument("--fallback-score", type=float, help="its reward under --on-failure fallback")
    parser.add_argument(
        "--max-failure-rate",
        type=float,
        help="answer 503 to every request once more than this share of the last 100 samples failed (default 0.5)",
    )
    parser.add_argument("--timeout-s", type=float, help="seconds one (sample, grader) pair may take")
    parser.add_argument("--max-concurrent-samples", type=int, help="samples graded at once (default 256)")
    parser.add_argument(
        "--max-pending", type=int, help="samples admitted at once, graded or waiting; then 429 (default 1024)"
    )
    parser.add_argument("--retry-after-s", type=int, help="the Retry-After of a 429, in seconds (default 1)")
    parser.add_argument(
        "--normalize", action="store_true", default=None, help="the reward is the normalised score"
    )
    parser.add_argument(
        "--include-reasons", action="store_true", default=None, help="return each grader's reason"
    )
    parser.add_argument(
        "--replicas",
        type=int,
        help="serve from N replicas on Ray Serve (the cluster RAY_ADDRESS names, else a local one; "
        "needs the serve-ray extra); default: one process",
    )
    parser.add_argument(
        "--no-judge-cache",
        dest="judge_cache",
        action="store_false",
        default=None,
        help="skip the YAML's judge cache",
    )


def run_command(args: argparse.Namespace) -> int:
    try:
        server = importlib.import_module(SERVER_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name != "prometheus_client":
            raise
        print(
            "error: openjudge serve needs prometheus-client: pip install 'openjudge-graders[serve]'",
            file=sys.stderr,
        )
        return EXIT_INVALID
    run: Callable[[argparse.Namespace, Mapping[str, str]], int] = server.run_command
    return run(args, _OPTIONS)
