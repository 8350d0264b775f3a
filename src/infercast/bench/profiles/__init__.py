"""Per-op profiles: the record types, and importers for profiles measured elsewhere.

=====================  ==================================================  ===========
kind                   what                                                reader
=====================  ==================================================  ===========
``ort``                ONNX Runtime ``enable_profiling`` JSON               :mod:`.ort`
``tflite``             ``benchmark_model --enable_op_profiling`` text/CSV  :mod:`.tflite`
``tvm-debug``          TVM graph debug executor table                      :mod:`.tvm`
=====================  ==================================================  ===========
"""

from __future__ import annotations

from pathlib import Path

from infercast.bench.profiles.base import OpTime, Profile, ProfileFormatError, read_text
from infercast.bench.profiles.ort import is_ort_profile, load_json, parse_ort_events
from infercast.bench.profiles.tflite import looks_like_tflite_benchmark, parse_tflite_benchmark
from infercast.bench.profiles.tvm import DEBUG_HEADER, parse_tvm_debug

KINDS = ("ort", "tflite", "tvm-debug")

__all__ = ["KINDS", "OpTime", "Profile", "ProfileFormatError", "read_profile", "sniff"]


def sniff(text: str) -> str | None:
    """The kind of profile ``text`` holds, or None."""
    head = text.lstrip()[:1]
    if head and head in "[{":
        try:
            data = load_json(text, "")
        except ProfileFormatError:
            return None
        return "ort" if is_ort_profile(data) else None
    if looks_like_tflite_benchmark(text):
        return "tflite"
    if any(DEBUG_HEADER.match(ln) for ln in text.splitlines()):
        return "tvm-debug"
    return None


def read_profile(path: str | Path, kind: str | None = None, *, skip_runs: int = 1) -> Profile:
    """Read a profile file of ``kind`` (sniffed from the content when None)."""
    p = Path(path)
    text = read_text(p)
    k = kind or sniff(text)
    if k is None:
        raise ProfileFormatError(
            f"{p}: not a profile infercast can read",
            "give an ONNX Runtime profiling JSON, the output of TFLite benchmark_model "
            "--enable_op_profiling=true (text or CSV), or a TVM debug executor table",
        )
    if k == "ort":
        return parse_ort_events(load_json(text, str(p)), skip_runs=skip_runs, where=str(p))
    if k == "tflite":
        return parse_tflite_benchmark(text, where=str(p))
    if k == "tvm-debug":
        return parse_tvm_debug(text, where=str(p))
    raise ProfileFormatError(f"unknown profile kind '{k}'", f"choose from {', '.join(KINDS)}")
