"""What every benchmark gets: paths, the --quick switch, temp dirs and a running daemon."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bench.daemon import Daemon
from bench.locomo_data import Locomo, missing

REPO = Path(__file__).resolve().parent.parent


@dataclass(slots=True)
class Context:
    locomo_dir: Path
    quick: bool = False
    full: bool = False  # the largest sizes too, which take hours
    repo: Path = REPO
    _locomo: Locomo | None = field(default=None, repr=False)

    def locomo(self) -> Locomo:
        """The LoCoMo data; raises ``LocomoMissing`` (the benchmark is then skipped)."""
        if self._locomo is None:
            self._locomo = Locomo.load(self.locomo_dir)
        return self._locomo

    def locomo_missing(self) -> str | None:
        """What is missing from the LoCoMo folder, for benchmarks that can run without it."""
        return missing(self.locomo_dir)

    @contextlib.contextmanager
    def tempdir(self, prefix: str) -> Iterator[Path]:
        with tempfile.TemporaryDirectory(prefix=f"sidecar-bench-{prefix}-") as tmp:
            yield Path(tmp)

    @contextlib.contextmanager
    def daemon(
        self, agent_dir: Path, workdir: Path, crew_dir: Path | None = None, embedder: str = "none"
    ) -> Iterator[Daemon]:
        """A started daemon (crew tier in ``workdir/crew`` by default), always stopped.

        Sparse-only unless ``embedder`` says otherwise, so that figures about the index
        and write paths are not mixed with background inference.
        """
        crew = crew_dir or workdir / "crew"
        crew.mkdir(parents=True, exist_ok=True)
        agent_dir.mkdir(parents=True, exist_ok=True)
        log = workdir / "daemon.log"
        with Daemon(agent_dir, crew, log, extra_args=["--embedder", embedder]) as daemon:
            daemon.wait_ready()
            yield daemon
