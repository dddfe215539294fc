"""Mark implementation modules private: ``git mv`` each to its ``_name`` and rewrite every reference.

The convention (docs/architecture.md, "Private modules"): a module whose name starts with
``_`` is internal; a package's ``__init__`` re-exports its public names. The modules that
stay public without an underscore are listed once, in ``PUBLIC_MODULES`` of
tests/test_public_api.py; a test fails on any other public-looking module.

Each table row is ``old dotted name -> new dotted name`` and one line on why. A run, for
each row whose table is chosen:

1. ``git mv`` the module (a ``.py`` file or a package folder) when the old one still
   exists and the new one does not;
2. rewrites every reference in openjudge/, tests/, bench/, docs/, scripts/, README.md and
   pyproject.toml (entry points, import-linter, mypy overrides): dotted names in code,
   strings and prose (``openjudge.jobs.engine`` and ``openjudge.jobs.engine.run_job``),
   file paths (``openjudge/jobs/engine.py``), and ``from openjudge.jobs import engine``
   (rewritten to ``from openjudge.jobs import _engine as engine`` so the code reads on);
3. sorts the imports of the files it rewrote and formats them (``ruff``).

Running it again changes nothing (the old names are gone), so it is safe to rerun after a
merge brings in new references to an old name: they are rewritten too.

Usage::

    python scripts/mark_private.py                 # APPLIED: the application layer (done)
    python scripts/mark_private.py --pending       # PENDING too: graders, models, runner, ...
    python scripts/mark_private.py --pending --dry-run
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("openjudge", "tests", "bench", "docs", "scripts", "examples")
SCANNED_FILES = ("README.md", "pyproject.toml")
SUFFIXES = {".py", ".md", ".toml", ".yaml", ".yml", ".txt", ".sh", ".cfg", ".ini", ".json"}
SELF = Path(__file__).resolve()


@dataclass(frozen=True, slots=True)
class Rename:
    old: str
    new: str
    why: str


def _rows(*rows: tuple[str, str] | tuple[str, str, str]) -> tuple[Rename, ...]:
    """``(old, why)`` rows, the new name being the old one with ``_`` before its last part,
    or ``(old, why, new)`` rows."""
    out = []
    for row in rows:
        old, why = row[0], row[1]
        parent, _, leaf = old.rpartition(".")
        out.append(Rename(old, row[2] if len(row) == 3 else f"{parent}._{leaf}", why))
    return tuple(out)


# Applied in the branch that introduced this script: the application layer. Each package's
# __init__ exports the few names a program needs (pinned in tests/test_public_api.py).
APPLIED: tuple[Rename, ...] = _rows(
    ("openjudge.jobs.datasets", "dataset readers; openjudge.jobs exports what a program reads"),
    ("openjudge.jobs.records", "the results-file line models; read through openjudge.jobs.read_results"),
    ("openjudge.jobs.results", "results writer and readers; read_results etc. exported by openjudge.jobs"),
    ("openjudge.jobs.fingerprint", "what binds a results file to its job; internal to resume"),
    ("openjudge.jobs.resume", "resume decisions; JobMismatchError exported by openjudge.jobs"),
    ("openjudge.jobs.engine", "the job engine; run_job and RunStats exported by openjudge.jobs"),
    ("openjudge.jobs.preflight", "dataset preflight for `openjudge validate`; CLI internals"),
    ("openjudge.jobs.summary", "summary statistics and the table; RunSummary exported by openjudge.jobs"),
    ("openjudge.jobs.report", "the HTML report; write_report exported by openjudge.jobs"),
    ("openjudge.jobs.replay", "re-grading part of a results file; engine internals"),
    ("openjudge.config.loader", "YAML loading and messages; load_config exported by openjudge.config"),
    (
        "openjudge.config.build",
        "config -> providers, graders, runner; build_job exported by openjudge.config",
    ),
    ("openjudge.config.custom", "importing module:Class types from a config's folder"),
    ("openjudge.config.locations", "file/line positions of YAML fields, for messages"),
    ("openjudge.config.params", "checking grader params against constructors, for messages"),
    ("openjudge.cli.run", "`openjudge run`; the CLI's only public name is openjudge.cli.main"),
    ("openjudge.cli.validate", "`openjudge validate` and `estimate`"),
    ("openjudge.cli.estimate", "token and cost estimates for `openjudge estimate`"),
    ("openjudge.cli.import_openai", "`openjudge import-openai-graders`"),
    (
        "openjudge.distributed.limits",
        "provider limits split per worker; plan_workers exported by the package",
    ),
    (
        "openjudge.distributed.ray_backend",
        "the Ray back end; RayBackend and grade_on_ray exported by the package",
    ),
    ("openjudge.metaeval.charts", "SVG charts of the HTML report"),
    ("openjudge.metaeval.cli", "`openjudge meta-eval`"),
    ("openjudge.metaeval.compare", "two runs compared; compare_runs exported by openjudge.metaeval"),
    ("openjudge.metaeval.configured", "collect_config; exported by openjudge.metaeval"),
    ("openjudge.metaeval.console", "the text tables; render_report exported by openjudge.metaeval"),
    ("openjudge.metaeval.headline", "benchmarks' own headline rules"),
    ("openjudge.metaeval.html", "the HTML report; render_html exported by openjudge.metaeval"),
    ("openjudge.metaeval.items", "labelled items; PairItem etc. exported by openjudge.metaeval"),
    ("openjudge.metaeval.judgements", "the --judgements file; read/write exported by openjudge.metaeval"),
    ("openjudge.metaeval.loaders", "labelled-data loaders; load_labelled exported by openjudge.metaeval"),
    ("openjudge.metaeval.metrics", "the metrics; summarize exported by openjudge.metaeval"),
    ("openjudge.metaeval.readings", "each figure in plain words"),
    ("openjudge.metaeval.recorded", "benchmarks' stored outputs"),
    ("openjudge.metaeval.report", "report models; MetaEvalReport exported by openjudge.metaeval"),
    ("openjudge.metaeval.rescore", "judgements scored without a judge; load_recorded exported"),
    ("openjudge.metaeval.runs", "running the graders; collect exported by openjudge.metaeval"),
    ("openjudge.metaeval.scales", "scores on the labels' scale"),
    ("openjudge.metaeval.stats", "bootstrap intervals"),
    ("openjudge.metaeval.verdicts", "judge verdicts read from results"),
    (
        "openjudge.config.schema",
        "the config-file models; one `schema` in the tree (openjudge.models.schema: messages, prompts)",
        "openjudge.config._spec",
    ),
)

# For the lead to run after the branches editing these packages are merged (``--pending``):
# every other module of the library packages whose name says nothing about being internal.
# Not here, and so public: seed-guide paths, modules run by name (``python -m``, entry
# points, VERL configs) and modules the docs import by path, listed with their reasons in
# PUBLIC_MODULES of tests/test_public_api.py. The reason of each row is the first line of
# the module's docstring: what it implements, behind its package's exports. Not here
# either: openjudge/graders/code/harness/, which runs inside the sandbox as a top-level
# package named ``harness`` (RUN_ELSEWHERE in tests/test_public_api.py).
PENDING: tuple[Rename, ...] = _rows(
    (
        "openjudge.graders.agent.tool.tool_call_precision_recall_match",
        "Precision or recall of the tool calls an agent made against ...",
    ),
    (
        "openjudge.graders.agent.tool.tool_call_step_sequence_match",
        "How well the order of an agent's tool calls follows a reference order",
    ),
    (
        "openjudge.graders.agent.trajectory.trajectory_step_efficiency",
        "Step efficiency of an agent trajectory: penalise steps that redo ...",
    ),
    (
        "openjudge.graders.agent.trajectory_parsing",
        "Read (action, observation) pairs out of OpenAI-format agent ...",
    ),
    (
        "openjudge.graders.code.backends",
        "Choosing a sandbox backend by name, and ``auto``: the strongest ...",
    ),
    ("openjudge.graders.code.cases", "Test cases for code-execution graders"),
    ("openjudge.graders.code.checks", "Checks the grader decides itself: a call in the sandbox, a ..."),
    (
        "openjudge.graders.code.code_execution",
        "Run a Python solution against test cases in a sandbox; the ...",
    ),
    ("openjudge.graders.code.local", "Running the harness in a local child process: pipes, limits, the ..."),
    (
        "openjudge.graders.code.namespaced",
        "The namespace backends: ``bwrap`` (bubblewrap) and ``unshare`` ...",
    ),
    (
        "openjudge.graders.code.reports",
        "Reading the facts a sandbox child reports, and turning a finished ...",
    ),
    (
        "openjudge.graders.code.sandbox",
        "Running untrusted Python: what to run, the limits, what happened, ...",
    ),
    (
        "openjudge.graders.code.sandbox_fusion",
        "The ``sandbox_fusion`` backend: run jobs on a SandboxFusion ...",
    ),
    (
        "openjudge.graders.common.correctness",
        "CorrectnessGrader: is the response correct, judged against the ...",
    ),
    (
        "openjudge.graders.common.hallucination",
        "HallucinationGrader: is every claim in the response supported by ...",
    ),
    (
        "openjudge.graders.common.harmfulness",
        "HarmfulnessGrader: is the response free of harmful, unsafe or ...",
    ),
    (
        "openjudge.graders.common.instruction_following",
        "InstructionFollowingGrader: does the response follow every ...",
    ),
    (
        "openjudge.graders.common.relevance",
        "RelevanceGrader: does the response address the query; raw 1-5, ...",
    ),
    (
        "openjudge.graders.comparison.anchor",
        "AnchorComparisonGrader: each response of a group against one ...",
    ),
    (
        "openjudge.graders.comparison.group",
        "What every group grader returns, and how it becomes one result per ...",
    ),
    (
        "openjudge.graders.comparison.group_tournament",
        "GroupTournamentGrader: a debiased all-pairs tournament scoring ...",
    ),
    (
        "openjudge.graders.comparison.knockout",
        "KnockoutTournamentGrader: a single-elimination bracket over a ...",
    ),
    (
        "openjudge.graders.comparison.listwise",
        "ListwiseRankingGrader: one judge call ranks 2..N responses to the ...",
    ),
    (
        "openjudge.graders.comparison.orders",
        "Position debiasing: combine the verdicts of one pair judged in ...",
    ),
    (
        "openjudge.graders.comparison.pairwise",
        "PairwisePreferenceGrader: which of two responses is better, judged ...",
    ),
    (
        "openjudge.graders.comparison.pairwise_judge",
        "One ordered comparison: is the response shown as A or the one ...",
    ),
    (
        "openjudge.graders.comparison.ratings",
        "Per-response scores from a group's comparisons: Borda counts and ...",
    ),
    (
        "openjudge.graders.comparison.tournament",
        "Round-robin tournament rewards for a group of responses (GRPO-style)",
    ),
    (
        "openjudge.graders.comparison.verdicts",
        "What a comparison judge replies: a winner between two positions, ...",
    ),
    ("openjudge.graders.format.json_match", "Does the response's JSON equal a reference JSON value?"),
    ("openjudge.graders.format.json_schema", "Does the response's JSON satisfy a JSON Schema?"),
    ("openjudge.graders.format.json_validator", "Is the response valid JSON?"),
    (
        "openjudge.graders.format.length_penalty",
        "Penalise responses shorter or longer than a target length range",
    ),
    (
        "openjudge.graders.format.ngram_repetition",
        "Penalise repeated n-grams (degenerate, looping generations)",
    ),
    (
        "openjudge.graders.format.schema_validator",
        "JSON Schema validation for the ``json_schema`` grader: the ...",
    ),
    ("openjudge.graders.inputs", "Run-time checks of grader inputs, shared by the built-in graders ..."),
    (
        "openjudge.graders.judge_output",
        "Reading a judge's reply: the judge's own verdict, and the default ...",
    ),
    (
        "openjudge.graders.math.answer_equivalence",
        "Is the final answer of a math solution equivalent to the reference ...",
    ),
    ("openjudge.graders.math.extract", "Find the final answer in a model's solution text"),
    ("openjudge.graders.math.normalize", "Normalise math answers and read them as exact numbers"),
    (
        "openjudge.graders.math.symbolic",
        "Symbolic equivalence of two LaTeX answers with sympy, when sympy ...",
    ),
    ("openjudge.graders.math.towers", "Refuse exponent towers before any parser or sympy sees them"),
    ("openjudge.graders.math.verify", "Worker-side equivalence: math-verify's LaTeX parsing and ..."),
    (
        "openjudge.graders.openai.blame",
        "Whose failure it is: OpenAI's error kinds mapped onto openjudge's ...",
    ),
    (
        "openjudge.graders.openai.formula",
        "``calculate_output`` of a ``multi`` grader: a small arithmetic ...",
    ),
    (
        "openjudge.graders.openai.grader",
        ":class:`OpenAIGrader`: one OpenAI grader JSON (any type, ``multi`` ...",
    ),
    (
        "openjudge.graders.openai.importer",
        "``openjudge import-openai-graders FILE``: a job config (YAML) from ...",
    ),
    (
        "openjudge.graders.openai.model_graders",
        "OpenAI ``score_model`` and ``label_model`` graders, through any ...",
    ),
    (
        "openjudge.graders.openai.python_grader",
        "OpenAI ``python`` graders: ``grade(sample, item)`` run in ...",
    ),
    ("openjudge.graders.openai.sample", "The ``sample`` namespace of OpenAI's graders, built from what ..."),
    (
        "openjudge.graders.openai.similarity",
        "``text_similarity`` metrics, each from the library that defines it",
    ),
    ("openjudge.graders.openai.spec", "OpenAI's grader JSON as typed models: what ``POST ..."),
    (
        "openjudge.graders.openai.templates",
        "OpenAI's ``{{ namespace.path }}`` templates: parsed once, rendered ...",
    ),
    ("openjudge.graders.registry", "The catalogue of built-in graders: config names, kinds, inputs and ..."),
    ("openjudge.graders.safe_regex", "Regular expressions from configs and datasets, matched against ..."),
    ("openjudge.graders.scoring", "Score modes beyond reading the verdict: logprob-weighted ..."),
    (
        "openjudge.graders.text.metrics",
        "Pure-Python text similarity metrics: edit distance, LCS / ROUGE-L ...",
    ),
    (
        "openjudge.graders.text.number_accuracy",
        "Compare the numbers written in a response with those in a reference",
    ),
    (
        "openjudge.graders.text.similarity",
        "Surface similarity of a response to a reference: BLEU, ROUGE-L or ...",
    ),
    (
        "openjudge.graders.text.tokens",
        "Language-neutral text normalisation and tokenisation for the rule ...",
    ),
    ("openjudge.graders.workers", "Pure functions in worker processes that are killed when they ..."),
    (
        "openjudge.integrations.skyrl.env",
        "A SkyRL-Gym text environment whose reward comes from openjudge graders",
    ),
    (
        "openjudge.integrations.skyrl.scorer",
        "Score one environment step with the graders, from any thread, on ...",
    ),
    (
        "openjudge.integrations.skyrl.settings",
        "The options of the SkyRL environment: where the graders come from ...",
    ),
    (
        "openjudge.integrations.trl.rewards",
        "Reward functions for TRL's ``GRPOTrainer`` (and ``RLOOTrainer``, ...",
    ),
    (
        "openjudge.integrations.trl.samples",
        "Turn what TRL passes a reward function into one openjudge sample ...",
    ),
    (
        "openjudge.integrations.trl.settings",
        "The options of the TRL integration, validated once (a failure is ...",
    ),
    (
        "openjudge.integrations.verl.batch",
        "Whole-batch scoring (the legacy ``__call__(data, return_dict)`` shape)",
    ),
    (
        "openjudge.integrations.verl.functions",
        "The seed guide's reward-function API: samples grouped by prompt ...",
    ),
    (
        "openjudge.integrations.verl.gc_freeze",
        "Keep full garbage collections from pausing a VERL worker's event loop",
    ),
    (
        "openjudge.integrations.verl.group.barrier",
        "Where the members of a GRPO group meet: one barrier per ``uid``, ...",
    ),
    (
        "openjudge.integrations.verl.group.manager",
        "``OpenJudgeAgentLoopManager``: VERL's V1 agent-loop manager with ...",
    ),
    (
        "openjudge.integrations.verl.group.settings",
        "What the training command configures for group judging: ...",
    ),
    (
        "openjudge.integrations.verl.group.stage",
        "The group stage of one agent-loop worker: its settings and its ...",
    ),
    (
        "openjudge.integrations.verl.group.verdict",
        "A group's verdict: each member's reward and ``reward_extra_info``, ...",
    ),
    (
        "openjudge.integrations.verl.group.worker",
        "``OpenJudgeAgentLoopWorker``: VERL 0.9's V1 agent-loop worker, ...",
    ),
    (
        "openjudge.integrations.verl.hosted_judge",
        "The judge VERL hosts itself: ``kind: verl`` providers in the ...",
    ),
    (
        "openjudge.integrations.verl.keys",
        "The ``reward_extra_info`` keys the integration writes, and the ...",
    ),
    (
        "openjudge.integrations.verl.ledger",
        "One failure ledger for the run: breakers, the failure rate, start ...",
    ),
    (
        "openjudge.integrations.verl.modes",
        "Which of VERL's reward paths a run uses, read from its config: ...",
    ),
    (
        "openjudge.integrations.verl.reward_loop",
        "``OpenJudgeRewardManager``: VERL's reward-loop manager (0.7.1 to ...",
    ),
    (
        "openjudge.integrations.verl.rows",
        "VERL rows to samples: the real token ids of every row layout VERL ...",
    ),
    (
        "openjudge.integrations.verl.score_function",
        "An async ``compute_score`` for VERL's own ``naive`` (or ...",
    ),
    (
        "openjudge.integrations.verl.scoring",
        "Grade one sample (or many) with the configured graders and apply ...",
    ),
    (
        "openjudge.integrations.scoring.guard",
        "The breaker rules and the failure-rate ceiling every adapter applies",
    ),
    ("openjudge.integrations.scoring.keys", "The reward_extra_info keys every adapter writes"),
    ("openjudge.integrations.scoring.ledger", "The failure-ledger protocol and the in-process ledger"),
    ("openjudge.integrations.scoring.loader", "Building a scorer's job and caching it per process"),
    ("openjudge.integrations.scoring.scorer", "RewardScorer: exported by openjudge.integrations.scoring"),
    (
        "openjudge.integrations.scoring.settings",
        "ScorerSettings and the failure policies: exported by the package",
    ),
    ("openjudge.integrations.verl.settings", "What the training command configures: ..."),
    ("openjudge.models.errors", "The one exception a chat model raises for a failed call"),
    ("openjudge.models.inflight", "Identical deterministic calls in flight at once are made once"),
    ("openjudge.models.limits", "Concurrency and rate limits a provider enforces on every attempt"),
    ("openjudge.models.loop_local", "Objects that must belong to one event loop, created lazily per ..."),
    (
        "openjudge.models.schema.data_blocks",
        "Untrusted text as data blocks a judge can tell apart from instructions",
    ),
    ("openjudge.models.secrets", "Keep credentials out of everything a user or a log can read"),
    ("openjudge.models.timeouts", "A timeout scope, cheap on asyncio and correct anywhere"),
    ("openjudge.providers.azure", "Azure OpenAI deployments through litellm's ``azure/`` route, with ..."),
    (
        "openjudge.providers.completion",
        "The chat-completions wire format: a request's sampling fields, and ...",
    ),
    ("openjudge.providers.litellm", "Every litellm route as a chat model: ``openai/``, ..."),
    (
        "openjudge.providers.openai_compatible",
        "The transport for OpenAI's chat-completions wire format, over any ...",
    ),
    ("openjudge.providers.registry", "Resolve a model string to a chat model through one explicit table ..."),
    ("openjudge.providers.structured", "Build the ``response_format`` for each structured-output mode ..."),
    (
        "openjudge.providers.transformers.batcher",
        "A dynamic batcher: concurrent async calls share forward passes on ...",
    ),
    (
        "openjudge.providers.transformers.chat",
        "The generative judge: ``kind: transformers`` for the ``llm`` graders",
    ),
    (
        "openjudge.providers.transformers.constraints",
        "Constrained decoding: JSON-schema grammars applied token by token ...",
    ),
    (
        "openjudge.providers.transformers.errors",
        "The one exception local inference raises, classified for the ...",
    ),
    (
        "openjudge.providers.transformers.generation",
        "Batched chat generation with a causal LM: left-padded ...",
    ),
    (
        "openjudge.providers.transformers.loading",
        "Load a checkpoint and its tokenizer onto a device (imports torch ...",
    ),
    (
        "openjudge.providers.transformers.local_model",
        "One in-process model: loaded lazily, once, and fed by a dynamic ...",
    ),
    (
        "openjudge.providers.transformers.logprobs",
        "Per-token log-probabilities of a batched ``generate``, and their ...",
    ),
    (
        "openjudge.providers.transformers.requests",
        "What the two roles ask of a local model, torch-free so the ...",
    ),
    (
        "openjudge.providers.transformers.reward",
        "The in-process reward model: ``type: reward_model`` on ``kind: ...",
    ),
    (
        "openjudge.providers.transformers.scoring",
        "Batched forward passes of a sequence-classification (reward) model",
    ),
    (
        "openjudge.providers.transformers.settings",
        "What a local ``transformers`` model is, where it runs and how ...",
    ),
    (
        "openjudge.providers.transformers.transport",
        "The core's transport around a local model: one attempt is one ...",
    ),
    ("openjudge.runner.concurrency", "The runner's concurrency against the providers' own limits"),
    ("openjudge.runner.grader_config", "How a grader gets its inputs: :class:`GraderConfig` and its ..."),
    ("openjudge.runner.mapper", "Mappers: how a sample's fields become a grader's keyword inputs"),
    ("openjudge.runner.progress", "A small progress line on stderr: done/total, errors, throughput, ETA"),
    ("openjudge.runner.results", "What the runner returns: results per grader, or per sample when ..."),
    ("openjudge.runner.settings", "How a runner runs: one frozen settings object, replaced rather ..."),
    ("openjudge.runner.sync", "A synchronous facade: one long-lived event loop on a helper thread"),
    ("openjudge.runner.watchdog", "Per-pair timeouts for a whole run from one timer task (asyncio only)"),
)


def tables(pending: bool) -> tuple[Rename, ...]:
    return APPLIED + (PENDING if pending else ())


def _path(dotted: str) -> Path:
    return ROOT.joinpath(*dotted.split("."))


def _existing(dotted: str) -> Path | None:
    base = _path(dotted)
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base
    return None


def _files() -> Iterable[Path]:
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*")):
            if (
                path.is_file()
                and path.suffix in SUFFIXES
                and "__pycache__" not in path.parts
                and path.resolve() != SELF
            ):
                yield path
    for name in SCANNED_FILES:
        if (ROOT / name).is_file():
            yield ROOT / name


def _dotted_pattern(old: str) -> re.Pattern[str]:
    # Not inside a longer name: no word character or dot before, no word character after.
    return re.compile(rf"(?<![\w.]){re.escape(old)}(?!\w)")


def _path_pattern(old: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w/.]){re.escape(old.replace('.', '/'))}(?=\.py\b|/)")


def _from_parent_imports(text: str, rename: Rename) -> str:
    """``from parent import leaf`` -> ``from parent import _leaf as leaf`` (also in lists)."""
    parent, _, leaf = rename.old.rpartition(".")
    new_leaf = rename.new.rpartition(".")[2]
    if f"from {parent} import" not in text:
        return text
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    # Offset of each line's first character (ast counts "\n" lines, not str.splitlines()'s).
    starts = [0, *(match.end() for match in re.finditer("\n", text))]
    spans = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.ImportFrom)
            and node.module == parent
            and node.level == 0
            and any(alias.name == leaf for alias in node.names)
        ):
            assert node.end_lineno is not None and node.end_col_offset is not None
            spans.append(
                (starts[node.lineno - 1] + node.col_offset, starts[node.end_lineno - 1] + node.end_col_offset)
            )
    for start, end in sorted(spans, reverse=True):  # from the end, so earlier offsets stay valid
        head, _, names = text[start:end].partition(" import ")
        names = re.sub(rf"(?<![\w.]){leaf}\s+as\b", f"{new_leaf} as", names)
        names = re.sub(rf"(?<![\w.]){leaf}(?!\w)(?!\s+as\b)", f"{new_leaf} as {leaf}", names)
        text = f"{text[:start]}{head} import {names}{text[end:]}"
    return text


def rewrite(text: str, renames: Sequence[Rename], *, python: bool) -> str:
    for rename in renames:
        text = _dotted_pattern(rename.old).sub(rename.new, text)
        text = _path_pattern(rename.old).sub(rename.new.replace(".", "/"), text)
        if python:
            text = _from_parent_imports(text, rename)
    return text


def _git_mv(rename: Rename, dry_run: bool) -> str | None:
    source = _existing(rename.old)
    if source is None:
        return None
    if _existing(rename.new) is not None:
        raise SystemExit(f"both {rename.old} and {rename.new} exist: merge them by hand first")
    target = _path(rename.new).with_suffix(".py") if source.suffix == ".py" else _path(rename.new)
    if not dry_run:
        subprocess.run(["git", "mv", str(source), str(target)], cwd=ROOT, check=True)
    return f"git mv {source.relative_to(ROOT)} {target.relative_to(ROOT)}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pending", action="store_true", help="also apply the PENDING table")
    parser.add_argument("--dry-run", action="store_true", help="print what would change, change nothing")
    args = parser.parse_args(argv)
    renames = tables(args.pending)
    for rename in renames:
        if not rename.new.rpartition(".")[2].startswith("_"):
            raise SystemExit(f"{rename.old} -> {rename.new}: the new name must start with '_'")
        moved = _git_mv(rename, args.dry_run)
        if moved:
            print(moved)
    changed = 0
    python_files: list[str] = []
    for path in _files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        new = rewrite(text, renames, python=path.suffix == ".py")
        if new != text:
            changed += 1
            print(f"rewrote {path.relative_to(ROOT)}")
            if not args.dry_run:
                path.write_text(new, encoding="utf-8")
                if path.suffix == ".py":
                    python_files.append(str(path))
    if python_files:  # renamed imports sort differently: let ruff put them back in order
        ruff = [sys.executable, "-m", "ruff"]
        subprocess.run(
            [*ruff, "check", "--fix", "--select", "I001", "-q", *python_files], cwd=ROOT, check=False
        )
        subprocess.run([*ruff, "format", "-q", *python_files], cwd=ROOT, check=False)
    print(f"{len(renames)} modules, {changed} files rewritten{' (dry run)' if args.dry_run else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
