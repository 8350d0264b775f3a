"""The ONNX frontend: file -> :class:`~infercast.ir.Graph`.

* :mod:`.wire` reads the file's structure over a memory map, leaving large
  initializer data out (weights are never parsed);
* :mod:`.reader` turns the ``ModelProto`` into a Graph (ONNX's own shape
  inference, constants, folded nodes, QDQ parameters);
* :mod:`.fold` evaluates small constant sub-computations so shape inference sees
  through them;
* :mod:`.shapes` fills the output shapes ONNX's inference leaves unknown, with one
  rule per op following the ONNX operator specification.
"""

from infercast.frontends.onnx.reader import canonical_name, load_onnx
from infercast.frontends.onnx.wire import WireError, read_structure

__all__ = ["WireError", "canonical_name", "load_onnx", "read_structure"]
