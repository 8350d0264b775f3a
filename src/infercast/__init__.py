"""infercast: how a neural network will fit and run on an edge device, before deployment.

Public API (:mod:`infercast.api`), every function on a path or a loaded graph::

    import infercast
    graph = infercast.load("model.tflite")              # Graph (IR)
    result = infercast.analyze(graph)                    # per-layer MACs, FLOPs, bytes
    result.totals.macs, result.layers[0].flops
    rows = result.to_records()                           # one flat dict per layer
    doc = result.to_dict()                               # the infercast.analysis/1 JSON
    infercast.plan_memory(graph).arena_bytes
    infercast.check(graph, "ethos-u55-128").exit_code
    infercast.estimate(graph, "rpi4-cpu", analysis=result).latency_s
    infercast.whatif(graph, "k210-kpu", resolution=[128, 160], width=[0.5, 1.0]).to_records()
    infercast.advise(graph, "k210-kpu").to_dict()
    infercast.html_report(graph, ["rpi4-cpu", "k210-kpu"], output="report.html")  # one file

``infercast.estimate``, ``infercast.bench`` and ``infercast.whatif`` are the functions;
the packages of the same names are reached with ``from infercast.estimate.forecast
import ...``.
"""

# infercast.api imports the subpackages infercast.bench, infercast.estimate and
# infercast.whatif first, so the functions of the same names bound here are what stays.
from infercast._version import __version__
from infercast.analysis.cost import Analysis, LayerCost, Totals
from infercast.api import (
    AdviceResult,
    AnalysisResult,
    BenchResult,
    Calibration,
    CheckResult,
    EstimateResult,
    MemoryPlan,
    ProfileResult,
    TargetList,
    ValidationResult,
    WhatIfResult,
    advise,
    analyze,
    bench,
    bench_remote,
    calibrate,
    check,
    estimate,
    html_report,
    list_targets,
    load,
    plan_memory,
    profile_import,
    validate,
    whatif,
)
from infercast.errors import InfercastError, ModelFileError, SymbolicShapeError
from infercast.ir import DType, Graph, Node, Quantization, Tensor
from infercast.targets import Target, load_target

__all__ = [
    "AdviceResult",
    "Analysis",
    "AnalysisResult",
    "BenchResult",
    "Calibration",
    "CheckResult",
    "DType",
    "EstimateResult",
    "Graph",
    "InfercastError",
    "LayerCost",
    "MemoryPlan",
    "ModelFileError",
    "Node",
    "ProfileResult",
    "Quantization",
    "SymbolicShapeError",
    "Target",
    "TargetList",
    "Tensor",
    "Totals",
    "ValidationResult",
    "WhatIfResult",
    "__version__",
    "advise",
    "analyze",
    "bench",
    "bench_remote",
    "calibrate",
    "check",
    "estimate",
    "html_report",
    "list_targets",
    "load",
    "load_target",
    "plan_memory",
    "profile_import",
    "validate",
    "whatif",
]
