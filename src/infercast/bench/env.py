"""The machine a measurement was taken on: CPU model, cores, Python, library versions."""

from __future__ import annotations

import os
import platform
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model", "Hardware") and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_governor() -> str | None:
    try:
        return Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").read_text().strip()
    except OSError:
        return None


def _version(dist: str) -> str | None:
    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def environment() -> dict[str, Any]:
    """Facts that change a latency figure, recorded with every benchmark."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        usable = os.cpu_count() or 0
    try:
        load = os.getloadavg()
    except OSError:  # pragma: no cover
        load = (0.0, 0.0, 0.0)
    return {
        "cpu_model": cpu_model(),
        "machine": platform.machine(),
        "logical_cores": os.cpu_count(),
        "usable_cores": usable,
        "cpu_governor": cpu_governor(),
        "load_average_1m": round(load[0], 2),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "numpy": _version("numpy"),
        "infercast": _version("infercast"),
    }
