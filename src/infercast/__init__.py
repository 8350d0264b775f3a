"""infercast: how a neural network will fit and run on an edge device, before deployment.

Public API::

    import infercast
    graph = infercast.load("model.tflite")          # Graph (IR)
    result = infercast.analyze("model.onnx")         # Analysis: per-layer MACs, FLOPs, bytes
    result.totals.macs, result.layers[0].flops
"""

from infercast.analysis.cost import Analysis, LayerCost, Totals, analyze
from infercast.errors import InfercastError, ModelFileError, SymbolicShapeError
from infercast.frontends import load
from infercast.ir import DType, Graph, Node, Quantization, Tensor

__version__ = "0.1.0"

__all__ = [
    "Analysis",
    "DType",
    "Graph",
    "InfercastError",
    "LayerCost",
    "ModelFileError",
    "Node",
    "Quantization",
    "SymbolicShapeError",
    "Tensor",
    "Totals",
    "__version__",
    "analyze",
    "load",
]
