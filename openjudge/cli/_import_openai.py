"""``openjudge import-openai-graders FILE``: write a job config from OpenAI grader JSON.

FILE holds a grader, a fine-tuning job (``method.reinforcement.grader``), a graders
run request or an eval (``testing_criteria``); see
:mod:`openjudge.graders.openai._importer`. The YAML goes to ``--out`` (refusing to
overwrite without ``--force``) or to standard output; every grader in it is built once
before writing, so a grader the JSON gets wrong is reported now, not at the first run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from openjudge.cli._codes import EXIT_INVALID, EXIT_OK
from openjudge.config._build import build_job
from openjudge.config._loader import ConfigError, parse_config

__all__ = ["HELP", "add_arguments", "run_command"]

HELP = "write a job config (YAML) from OpenAI grader JSON (a grader, an RFT job, an eval)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "file", type=Path, help="the JSON file (grader, fine-tuning job, graders run request or eval)"
    )
    parser.add_argument("-o", "--out", type=Path, help="write the YAML here (default: standard output)")
    parser.add_argument("--data", help="the dataset path to put in the config's data.path")
    parser.add_argument("--force", action="store_true", help="overwrite --out if it exists")


def run_command(args: argparse.Namespace) -> int:
    from openjudge.graders.openai._importer import job_config_yaml, load_json

    source: Path = args.file
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        print(
            f"error: {source}: cannot read the file ({getattr(exc, 'strerror', None) or exc})",
            file=sys.stderr,
        )
        return EXIT_INVALID
    try:
        # Every grader is built here, so a problem names the JSON file and the grader's path.
        config_text = job_config_yaml(load_json(text, str(source)), source=str(source), data_path=args.data)
    except ConfigError as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        return EXIT_INVALID
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    try:
        # The written file must load: parse it as `openjudge run` will (no environment needed).
        generated = f"<the config generated from {source}>"
        config = parse_config(config_text, source=generated, env={"OPENAI_API_KEY": "sk-check"})
        build_job(config, source=generated, use_cache=False)
    except ValueError as exc:  # the graders built: a fault of this command, not of the JSON
        problems = exc.problems if isinstance(exc, ConfigError) else [str(exc)]
        print(
            f"error: the config generated from {source} does not load (a bug in import-openai-graders):",
            file=sys.stderr,
        )
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
        return EXIT_INVALID
    out: Path | None = args.out
    if out is None:
        sys.stdout.write(config_text)
        return EXIT_OK
    if out.exists() and not args.force:
        print(f"error: {out} exists; pass --force to overwrite it", file=sys.stderr)
        return EXIT_INVALID
    out.write_text(config_text, encoding="utf-8")
    print(f"wrote {out}: check the provider (for model graders) and the mapper, then: openjudge run {out}")
    return EXIT_OK
