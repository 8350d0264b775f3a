"""A progress bar on stderr for benchmark runs, shown only once the command has run a second."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from infercast.bench.harness import RunSpec
from infercast.report.text import shown

SHOW_AFTER_S = 1.0


class BenchProgress:
    def __init__(self, total: int, enabled: bool | None = None) -> None:
        from rich.console import Console

        self.console = Console(stderr=True)
        self.enabled = self.console.is_terminal if enabled is None else enabled
        self.total = total
        self.t0 = time.monotonic()
        self._progress: Any = None
        self._task: Any = None

    def _start(self) -> None:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self._progress = Progress(
            TextColumn("{task.description}", markup=False),
            BarColumn(),
            TimeElapsedColumn(),
            console=self.console,
            transient=True,
        )
        self._progress.start()
        self._task = self._progress.add_task("", total=100.0)

    def start(self, specs: Sequence[RunSpec]) -> None:
        """The runs are planned: ``specs`` is how many there are."""
        self.total = len(specs)

    def update(self, i: int, spec: RunSpec, phase: str, done: float) -> None:
        if not self.enabled:
            return
        if self._progress is None:
            if time.monotonic() - self.t0 < SHOW_AFTER_S:
                return
            self._start()
        self._progress.update(
            self._task,
            description=shown(f"[{i + 1}/{self.total}] {spec.label}: {phase}"),
            completed=100.0 * done if phase == "measure" else 0.0,
        )

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
