"""The LoCoMo evaluation folder, read at run time.

The data is CC BY-NC 4.0: nothing from it is ever copied into the repository.
Questions and conversation files come from the evaluation script's own
functions (``load_dataset``, ``build_corpus``, ``load_questions``), imported
from the ``--locomo`` folder; generated corpora go to temporary folders only.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

SCRIPT = "locomo_eval.py"
DATASET = "locomo-dev.json"
DEV_SAMPLES = range(0, 5)  # the script's "dev" split


def import_eval_module(folder: Path) -> ModuleType:
    """``import locomo_eval`` from ``folder`` (numpy comes from the dev dependencies)."""
    cached = sys.modules.get("locomo_eval")
    if cached is not None:
        return cached
    sys.path.insert(0, str(folder))
    try:
        return importlib.import_module("locomo_eval")
    finally:
        sys.path.remove(str(folder))


class LocomoMissing(FileNotFoundError):
    """The --locomo folder, or a file a benchmark needs from it, is not there."""


def missing(folder: Path) -> str | None:
    """What is missing from the LoCoMo folder, in one line; None when it is complete."""
    if not folder.is_dir():
        return f"LoCoMo data not found: no folder {folder} (pass --locomo DIR)"
    absent = [name for name in (SCRIPT, DATASET) if not (folder / name).is_file()]
    if absent:
        return f"LoCoMo data incomplete: {', '.join(absent)} not in {folder} (pass --locomo DIR)"
    return None


def check_folder(folder: Path) -> None:
    why = missing(folder)
    if why is not None:
        raise LocomoMissing(why)


@dataclass(slots=True)
class Locomo:
    folder: Path
    module: ModuleType
    samples: list[dict[str, Any]]

    @classmethod
    def load(cls, folder: Path) -> Locomo:
        check_folder(folder)
        module = import_eval_module(folder)
        return cls(folder, module, module.load_dataset(folder / DATASET))

    @property
    def script(self) -> Path:
        return self.folder / SCRIPT

    def dev_corpora(self) -> list[Any]:
        """The script's in-memory corpora (relative path -> lines) of the dev conversations."""
        return [self.module.build_corpus(self.samples[i], i) for i in self._dev()]

    def dev_questions(self) -> list[str]:
        """Every scored question (categories 1-4) of the dev split, in file order."""
        out: list[str] = []
        for i in self._dev():
            corpus = self.module.build_corpus(self.samples[i], i)
            out += [q.question for q in self.module.load_questions(self.samples[i], i, corpus)]
        return out

    def or_query(self, question: str) -> str:
        """The script's plain-FTS5 query: OR of quoted non-stopword terms."""
        return str(self.module.fts5_or_query(question))

    def _dev(self) -> list[int]:
        return [i for i in DEV_SAMPLES if i < len(self.samples)]


def subprocess_env(repo: Path) -> dict[str, str]:
    """Our environment, with the repository importable (``sidecar``, ``bench``)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(repo), env.get("PYTHONPATH")) if p)
    return env
