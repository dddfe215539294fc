"""Build a config's graders, each with what its type declares it takes from the config.

Each ``graders:`` entry goes through the same steps: find its type, check its ``params``
against the constructor, add what the type's declaration asks for (its provider's chat
or reward model, its result name, files relative to the config), construct it, and bind
its mapper. A step that fails records a ``file:line: field: message`` problem and the
grader is left out, so every grader's problems are found in one pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from openjudge.config._binding import ProviderObjects
from openjudge.config._custom import grader_class
from openjudge.config._locations import Located
from openjudge.config._params import grader_arguments
from openjudge.config._spec import GraderSpec
from openjudge.graders._registry import GraderType
from openjudge.graders.base_grader import BaseGrader
from openjudge.graders.blame import set_response_failure_score
from openjudge.models.chat_client import ChatClient
from openjudge.runner._grader_config import BoundGrader
from openjudge.runner._mapper import Mapper, MissingFieldError
from openjudge.runner.grading_runner import GraderConfig

__all__ = ["BuiltGraders", "UnmappedInputError"]


class UnmappedInputError(MissingFieldError):
    """A grader input a sample lacks, for a grader without a mapper (worded for YAML)."""

    def __init__(self, field: str, grader: str) -> None:
        super().__init__(field, field)
        self.grader = grader

    def __str__(self) -> str:
        return (
            f"sample has no field {self.path!r}: add it to the data, or map it from another field "
            f"with graders.{self.grader}.mapper: {{{self.path}: <field>}}"
        )


def _same_named(grader: BaseGrader, key: str) -> Mapper:
    """The mapper of a grader without one: its inputs are the sample's same-named fields."""
    required = sorted(grader.input_spec().required)

    def inputs(sample: Mapping[str, Any]) -> Mapping[str, Any]:
        if isinstance(sample, Mapping):
            for name in required:
                if name not in sample:
                    raise UnmappedInputError(name, key)
        return sample

    return inputs


class BuiltGraders:
    """A config's graders, built one at a time by :meth:`add`.

    Args:
        where: The config's locations, for messages.
        providers: The providers that were built (a grader whose provider failed is skipped:
            that failure is already reported).
        served: What those providers hand the graders bound to them.
        imports_from: The folder ``module:Class`` types are imported from.
        base_dir: The folder files named in ``params`` are read relative to.

    Attributes:
        configs: Each built grader with its mapper, by name.
        grader_providers: Grader name -> provider name, for graders handed something by a provider.
        types: Each grader's class and type entry, by name, built or not (once its type loaded).
        problems: What failed, as ``file:line: field: message`` lines.
    """

    def __init__(
        self,
        where: Located,
        providers: Mapping[str, ChatClient],
        served: ProviderObjects,
        imports_from: Path | None,
        base_dir: Path | None,
    ) -> None:
        self._where = where
        self._providers = providers
        self._served = served
        self._imports_from = imports_from
        self._base_dir = base_dir
        self.configs: dict[str, GraderConfig] = {}
        self.grader_providers: dict[str, str] = {}
        self.types: dict[str, tuple[type[BaseGrader], GraderType]] = {}
        self.problems: list[str] = []

    def add(self, name: str, spec: GraderSpec) -> None:
        """Build the grader ``name`` from its entry, or record why it cannot be built."""
        try:
            cls, entry = grader_class(spec.type, self._imports_from)
        except ValueError as exc:  # checked at load; a module changed since, or another base_dir
            self.problems.append(self._where.at(("graders", name, "type"), str(exc)))
            return
        self.types[name] = (cls, entry)
        if entry.binding.provider == "required" and spec.provider not in self._providers:
            return  # no provider, or it failed to build: already reported
        params = self._arguments(name, spec, cls, entry)
        if params is None:
            return
        grader = self._construct(name, spec, cls, params)
        if grader is not None:
            self._bind_mapper(name, spec, grader)

    def _arguments(
        self, name: str, spec: GraderSpec, cls: type[BaseGrader], entry: GraderType
    ) -> dict[str, Any] | None:
        """The constructor's arguments: the checked ``params`` plus what the type declares it takes."""
        params, found = grader_arguments(cls, spec.params, self._where, ("graders", name, "params"))
        if found:
            self.problems += found
            return None
        if spec.provider is not None and spec.provider in self._providers and entry.binding.takes_provider:
            try:
                params[entry.binding.parameter] = self._served.served(
                    spec.type, entry.binding.serves, spec.provider
                )
            except Exception as exc:  # e.g. a provider kind that serves no reward model
                self.problems.append(self._where.at(("graders", name, "provider"), str(exc)))
                return None
            self.grader_providers[name] = spec.provider
        for param in entry.file_params:
            value = params.get(param)
            if isinstance(value, str) and not value.lstrip().startswith("{") and self._base_dir is not None:
                params[param] = str(self._base_dir / value)  # an absolute path stays as it is
        if entry.names_results_after_key:
            params.setdefault("name", name)
        return params

    def _construct(
        self, name: str, spec: GraderSpec, cls: type[BaseGrader], params: dict[str, Any]
    ) -> BaseGrader | None:
        try:
            grader = cls(**params)
        except Exception as exc:  # whatever a constructor raises on bad params is a config problem
            self.problems.append(
                self._where.at(("graders", name, "params"), f"cannot build {spec.type!r}: {exc}")
            )
            return None
        if spec.response_failure_score is not None:
            try:
                set_response_failure_score(grader, spec.response_failure_score)
            except ValueError as exc:
                self.problems.append(self._where.at(("graders", name, "response_failure_score"), str(exc)))
                return None
        return grader

    def _bind_mapper(self, name: str, spec: GraderSpec, grader: BaseGrader) -> None:
        mapper = spec.mapper if spec.mapper is not None else _same_named(grader, name)
        try:
            BoundGrader(name, GraderConfig(grader, mapper))  # checks the mapper's input names now
        except (TypeError, ValueError) as exc:
            self.problems.append(self._where.at(("graders", name, "mapper"), str(exc)))
            return
        self.configs[name] = GraderConfig(grader, mapper, when=spec.when)
