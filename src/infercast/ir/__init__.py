"""The intermediate representation: Graph, Node, Tensor, DType."""

from infercast.ir.dtypes import DType
from infercast.ir.graph import Dim, Graph, Node, Quantization, Shape, Tensor

__all__ = ["DType", "Dim", "Graph", "Node", "Quantization", "Shape", "Tensor"]
