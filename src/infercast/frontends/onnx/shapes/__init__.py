"""Output-shape rules per canonical op, and the pass that applies them.

The ONNX frontend takes shapes from ONNX's own shape inference
(``onnx.shape_inference.infer_shapes(..., data_prop=True)``). That leaves outputs
unknown where ONNX has no rule or does not propagate values far enough (a
``Range`` whose bounds come from ``Shape``, ops defined as functions, newer ops,
training and ``ai.onnx.ml`` ops), and it is wrong in a few known places.
:func:`infer_missing_shapes` (:mod:`.engine`) walks the nodes in execution order
and fills those gaps from the rules of this package, one module per op family,
which follow the ONNX operator specification (https://onnx.ai/onnx/operators/).
It never replaces a dimension ONNX knows, except for the ops in
:data:`ONNX_INFERENCE_WRONG`.

Alongside shapes the pass propagates small *values* (at most 4096 elements) that
are known statically: constants, the output of ``Shape``/``Size`` on a static
tensor, and integer arithmetic, gathers, slices and concatenations on them
(:mod:`.values`). Rules read them with :meth:`OpContext.value`; that is how
``Reshape(x, Concat(Shape(x)[0:1], [-1]))`` or ``Range(0, Size(Shape(x)), 1)`` get
static output shapes.

Data-dependent outputs (``NonZero``, ``Unique``, ``Compress``, ``NonMaxSuppression``,
``StringSplit``, stop-word removal, image decoding, loop trip counts) keep ``None``
for the dimensions that depend on values, unless those values are constants.

Rules are written for ONNX semantics (attribute names, NCHW); graphs of other
formats are returned unchanged.
"""

from infercast.frontends.onnx.shapes import (  # noqa: F401  (importing a family registers its rules)
    contrib,
    control,
    conv,
    elementwise,
    linalg,
    loss,
    ml,
    movement,
    normalization,
    pool,
    recurrent,
    signal,
    training,
)
from infercast.frontends.onnx.shapes._common import MAX_VALUE_ELEMENTS, RULES, broadcast
from infercast.frontends.onnx.shapes.engine import ONNX_INFERENCE_WRONG, infer_missing_shapes
from infercast.frontends.onnx.shapes.linalg import matmul_shape

__all__ = [
    "MAX_VALUE_ELEMENTS",
    "ONNX_INFERENCE_WRONG",
    "RULES",
    "broadcast",
    "infer_missing_shapes",
    "matmul_shape",
]
