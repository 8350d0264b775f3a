"""Write small, real TFLite flatbuffers with exact operator parameters (test helper).

Built with the object API of the schema LiteRT ships
(``ai_edge_litert.schema_py_generated``), so every model is a genuine TFLite
file: the tests run each one through the LiteRT interpreter before using it,
and Vela compiles the same bytes. Used to put Vela and infercast side by side on
the edge cases of each constraint (stride 4, a 9x9 average pool, a 3x upscale,
...), which the keras fixtures do not contain.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as S

_NP = {
    "int8": (S.TensorType.INT8, np.int8),
    "uint8": (S.TensorType.UINT8, np.uint8),
    "int16": (S.TensorType.INT16, np.int16),
    "int32": (S.TensorType.INT32, np.int32),
    "int64": (S.TensorType.INT64, np.int64),
    "float32": (S.TensorType.FLOAT32, np.float32),
}
_PAD = {"SAME": S.Padding.SAME, "VALID": S.Padding.VALID}
_ACT = {
    None: S.ActivationFunctionType.NONE,
    "RELU": S.ActivationFunctionType.RELU,
    "RELU6": S.ActivationFunctionType.RELU6,
}


@dataclass
class Craft:
    """A single-subgraph TFLite model under construction."""

    tensors: list[Any] = field(default_factory=list)
    buffers: list[Any] = field(default_factory=lambda: [S.BufferT()])
    operators: list[Any] = field(default_factory=list)
    opcodes: list[str] = field(default_factory=list)
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))

    # ----------------------------------------------------------------- tensors
    def tensor(
        self,
        name: str,
        shape: tuple[int, ...],
        dtype: str = "int8",
        *,
        scale: float | list[float] | None = 0.05,
        zero_point: int | list[int] = 0,
        axis: int = 0,
        data: np.ndarray[Any, Any] | None = None,
    ) -> int:
        t = S.TensorT()
        t.name = name
        t.shape = list(shape)
        t.type = _NP[dtype][0]
        if data is not None:
            b = S.BufferT()
            b.data = np.frombuffer(
                np.ascontiguousarray(data.astype(_NP[dtype][1])).tobytes(), np.uint8
            )
            self.buffers.append(b)
            t.buffer = len(self.buffers) - 1
        else:
            t.buffer = 0
        if scale is not None:
            q = S.QuantizationParametersT()
            scales = scale if isinstance(scale, list) else [scale]
            zps = zero_point if isinstance(zero_point, list) else [zero_point] * len(scales)
            q.scale = list(map(float, scales))
            q.zeroPoint = list(map(int, zps))
            q.quantizedDimension = axis
            t.quantization = q
        self.tensors.append(t)
        return len(self.tensors) - 1

    def const(
        self, name: str, values: list[int] | np.ndarray[Any, Any], dtype: str = "int32"
    ) -> int:
        arr = np.asarray(values)
        return self.tensor(name, arr.shape, dtype, scale=None, data=arr)

    def weights(self, name: str, shape: tuple[int, ...], per_channel_axis: int | None = 0) -> int:
        data = self.rng.integers(-127, 128, size=shape)
        if per_channel_axis is None:
            return self.tensor(name, shape, "int8", scale=0.01, data=data)
        n = shape[per_channel_axis]
        return self.tensor(
            name,
            shape,
            "int8",
            scale=[0.01] * n,
            zero_point=[0] * n,
            axis=per_channel_axis,
            data=data,
        )

    def bias(self, name: str, n: int, scale: float) -> int:
        return self.tensor(
            name, (n,), "int32", scale=[scale] * n, zero_point=[0] * n, data=np.zeros(n, np.int32)
        )

    # -------------------------------------------------------------- operators
    def op(
        self,
        code: str,
        inputs: list[int],
        outputs: list[int],
        opt_type: int = 0,
        options: Any = None,
    ) -> None:
        if code not in self.opcodes:
            self.opcodes.append(code)
        o = S.OperatorT()
        o.opcodeIndex = self.opcodes.index(code)
        o.inputs = inputs
        o.outputs = outputs
        if options is not None:
            o.builtinOptionsType = opt_type
            o.builtinOptions = options
        self.operators.append(o)

    def conv(
        self,
        x: int,
        out: int,
        k: int,
        cout: int,
        cin: int,
        stride: int = 1,
        padding: str = "SAME",
        act: str | None = None,
        dilation: int = 1,
        weight_value: int | None = None,
        float_: bool = False,
    ) -> None:
        shape = (cout, k, k, cin)
        if float_:
            w = self.tensor(
                f"w{len(self.tensors)}",
                shape,
                "float32",
                scale=None,
                data=self.rng.standard_normal(shape).astype(np.float32),
            )
            b = self.tensor(
                f"b{len(self.tensors)}",
                (cout,),
                "float32",
                scale=None,
                data=np.zeros(cout, np.float32),
            )
        elif weight_value is not None:
            w = self.tensor(
                f"w{len(self.tensors)}",
                shape,
                "int8",
                scale=[0.01] * cout,
                zero_point=[0] * cout,
                data=np.full(shape, weight_value),
            )
            b = self.bias(f"b{len(self.tensors)}", cout, 0.05 * 0.01)
        else:
            w = self.weights(f"w{len(self.tensors)}", shape)
            b = self.bias(f"b{len(self.tensors)}", cout, 0.05 * 0.01)
        o = S.Conv2DOptionsT()
        o.padding, o.strideH, o.strideW = _PAD[padding], stride, stride
        o.dilationHFactor = o.dilationWFactor = dilation
        o.fusedActivationFunction = _ACT[act]
        self.op("CONV_2D", [x, w, b], [out], S.BuiltinOptions.Conv2DOptions, o)

    def depthwise(
        self, x: int, out: int, k: int, c: int, stride: int = 1, padding: str = "SAME"
    ) -> None:
        w = self.weights(f"w{len(self.tensors)}", (1, k, k, c), per_channel_axis=3)
        b = self.bias(f"b{len(self.tensors)}", c, 0.05 * 0.01)
        o = S.DepthwiseConv2DOptionsT()
        o.padding, o.strideH, o.strideW, o.depthMultiplier = _PAD[padding], stride, stride, 1
        o.dilationHFactor = o.dilationWFactor = 1
        self.op("DEPTHWISE_CONV_2D", [x, w, b], [out], S.BuiltinOptions.DepthwiseConv2DOptions, o)

    def pool(
        self, code: str, x: int, out: int, k: int, stride: int, padding: str, act: str | None = None
    ) -> None:
        o = S.Pool2DOptionsT()
        o.padding, o.strideH, o.strideW = _PAD[padding], stride, stride
        o.filterHeight = o.filterWidth = k
        o.fusedActivationFunction = _ACT[act]
        self.op(code, [x], [out], S.BuiltinOptions.Pool2DOptions, o)

    def pool_hw(self, code: str, x: int, out: int, k: tuple[int, int], padding: str) -> None:
        o = S.Pool2DOptionsT()
        o.padding, o.strideH, o.strideW = _PAD[padding], 1, 1
        o.filterHeight, o.filterWidth = k
        self.op(code, [x], [out], S.BuiltinOptions.Pool2DOptions, o)

    def transpose_conv(
        self,
        x: int,
        out: int,
        out_shape: tuple[int, ...],
        k: int,
        cout: int,
        cin: int,
        stride: int,
        padding: str = "SAME",
    ) -> None:
        shape = self.const(f"os{len(self.tensors)}", list(out_shape))
        w = self.weights(f"w{len(self.tensors)}", (cout, k, k, cin))
        o = S.TransposeConvOptionsT()
        o.padding, o.strideH, o.strideW = _PAD[padding], stride, stride
        self.op("TRANSPOSE_CONV", [shape, w, x], [out], S.BuiltinOptions.TransposeConvOptions, o)

    def resize_nearest(self, x: int, out: int, size: tuple[int, int]) -> None:
        s = self.const(f"size{len(self.tensors)}", list(size))
        o = S.ResizeNearestNeighborOptionsT()
        self.op(
            "RESIZE_NEAREST_NEIGHBOR",
            [x, s],
            [out],
            S.BuiltinOptions.ResizeNearestNeighborOptions,
            o,
        )

    def mean(self, x: int, out: int, axes: list[int], keep_dims: bool = True) -> None:
        a = self.const(f"axes{len(self.tensors)}", axes)
        o = S.ReducerOptionsT()
        o.keepDims = keep_dims
        self.op("MEAN", [x, a], [out], S.BuiltinOptions.ReducerOptions, o)

    def softmax(self, x: int, out: int) -> None:
        o = S.SoftmaxOptionsT()
        o.beta = 1.0
        self.op("SOFTMAX", [x], [out], S.BuiltinOptions.SoftmaxOptions, o)

    def fully_connected(self, x: int, out: int, n_in: int, n_out: int) -> None:
        w = self.weights(f"w{len(self.tensors)}", (n_out, n_in), per_channel_axis=None)
        b = self.tensor(
            f"b{len(self.tensors)}",
            (n_out,),
            "int32",
            scale=0.05 * 0.01,
            data=np.zeros(n_out, np.int32),
        )
        o = S.FullyConnectedOptionsT()
        self.op("FULLY_CONNECTED", [x, w, b], [out], S.BuiltinOptions.FullyConnectedOptions, o)

    def strided_slice(
        self, x: int, out: int, begin: list[int], end: list[int], strides: list[int]
    ) -> None:
        ins = [
            x,
            self.const(f"begin{len(self.tensors)}", begin),
            self.const(f"end{len(self.tensors)}", end),
            self.const(f"strides{len(self.tensors)}", strides),
        ]
        self.op(
            "STRIDED_SLICE",
            ins,
            [out],
            S.BuiltinOptions.StridedSliceOptions,
            S.StridedSliceOptionsT(),
        )

    def split(self, x: int, outs: list[int], axis: int) -> None:
        """TFLite SPLIT: the axis tensor is input 0, the data input 1 (split.cc)."""
        a = self.const(f"axis{len(self.tensors)}", [axis])
        o = S.SplitOptionsT()
        o.numSplits = len(outs)
        self.op("SPLIT", [a, x], outs, S.BuiltinOptions.SplitOptions, o)

    def pad(self, x: int, out: int, paddings: list[list[int]]) -> None:
        p = self.const(f"paddings{len(self.tensors)}", np.asarray(paddings, np.int32))
        self.op("PAD", [x, p], [out], S.BuiltinOptions.PadOptions, S.PadOptionsT())

    def add(self, a: int, b: int, out: int) -> None:
        self.op("ADD", [a, b], [out], S.BuiltinOptions.AddOptions, S.AddOptionsT())

    def unary(self, code: str, x: int, out: int) -> None:
        self.op(code, [x], [out])

    # ------------------------------------------------------------------ write
    def build(self, inputs: list[int], outputs: list[int], name: str = "crafted") -> bytes:
        sg = S.SubGraphT()
        sg.tensors, sg.inputs, sg.outputs, sg.operators = (
            self.tensors,
            inputs,
            outputs,
            self.operators,
        )
        sg.name = name
        codes = []
        for c in self.opcodes:
            oc = S.OperatorCodeT()
            code = getattr(S.BuiltinOperator, c)
            oc.builtinCode = code
            oc.deprecatedBuiltinCode = min(code, 127)
            oc.version = 1
            codes.append(oc)
        m = S.ModelT()
        m.version = 3
        m.operatorCodes = codes
        m.subgraphs = [sg]
        m.buffers = self.buffers
        m.description = f"infercast test model {name}"
        b = flatbuffers.Builder(4096)
        b.Finish(m.Pack(b), file_identifier=b"TFL3")
        return bytes(b.Output())


def mixed_int8_model() -> bytes:
    """An int8 chain whose ops fall on both sides of Ethos-U constraints.

    input 1x32x32x8 -> conv 3x3/1 SAME (NPU) -> conv 3x3/4 SAME (stride > 3
    with padding: CPU) -> conv 3x3/4 VALID on a fresh branch ... see the layer
    table in test_placement_vela.py.
    """
    c = Craft()
    x = c.tensor("input", (1, 32, 32, 8))
    t1 = c.tensor("conv3x3_s1_same", (1, 32, 32, 8))
    c.conv(x, t1, 3, 8, 8, 1, "SAME", "RELU")
    t2 = c.tensor("conv3x3_s4_same", (1, 8, 8, 8))
    c.conv(t1, t2, 3, 8, 8, 4, "SAME")
    t3 = c.tensor("conv4x4_s4_valid", (1, 8, 8, 8))
    c.conv(t1, t3, 4, 8, 8, 4, "VALID")
    t4 = c.tensor("add", (1, 8, 8, 8))
    c.add(t2, t3, t4)
    t5 = c.tensor("avgpool9x9_same", (1, 8, 8, 8))
    c.pool("AVERAGE_POOL_2D", t4, t5, 9, 1, "SAME")
    t6 = c.tensor("avgpool2x2_valid", (1, 4, 4, 8))
    c.pool("AVERAGE_POOL_2D", t5, t6, 2, 2, "VALID")
    t7 = c.tensor("dwconv3x3_s4", (1, 1, 1, 8))
    c.depthwise(t6, t7, 3, 8, 4, "SAME")
    t8 = c.tensor("maxpool2x2_same", (1, 4, 4, 8))
    c.pool("MAX_POOL_2D", t6, t8, 2, 1, "SAME")
    t9 = c.tensor("resize_x2", (1, 8, 8, 8))
    c.resize_nearest(t8, t9, (8, 8))
    t10 = c.tensor("resize_x3", (1, 24, 24, 8))
    c.resize_nearest(t9, t10, (24, 24))
    t11 = c.tensor("tconv3x3_s2", (1, 48, 48, 4))
    c.transpose_conv(t10, t11, (1, 48, 48, 4), 3, 4, 8, 2)
    t12 = c.tensor("tconv3x3_s3", (1, 144, 144, 4))
    c.transpose_conv(t11, t12, (1, 144, 144, 4), 3, 4, 4, 3)
    t13 = c.tensor("mean_hw", (1, 1, 1, 4))
    c.mean(t12, t13, [1, 2])
    t14 = c.tensor("mean_c", (1, 8, 8, 1))
    c.mean(t9, t14, [3])
    t15 = c.tensor("dequantize", (1, 1, 1, 8), "float32", scale=None)
    c.unary("DEQUANTIZE", t7, t15)
    return c.build([x], [t13, t14, t15], "mixed_int8")


def limits_int8_model() -> bytes:
    """Ops at and beyond Ethos-U numeric limits (Vela's SUPPORTED_OPS), in several branches."""
    c = Craft()
    x = c.tensor("input", (1, 30, 30, 8))
    t1 = c.tensor("conv3x3_s4_same_padded", (1, 8, 8, 8))
    c.conv(x, t1, 3, 8, 8, 4, "SAME")
    wide = c.tensor("input_wide", (1, 3, 3, 8000))
    t2 = c.tensor("conv3x3_heavy_weights", (1, 1, 1, 2))
    c.conv(wide, t2, 3, 2, 8000, 1, "VALID", weight_value=127)
    t3 = c.tensor("conv3x3_light_weights", (1, 1, 1, 2))
    c.conv(wide, t3, 3, 2, 8000, 1, "VALID", weight_value=1)
    row = c.tensor("input_row", (1, 1, 5000, 2))
    t4 = c.tensor("mean_w5000", (1, 1, 1, 2))
    c.mean(row, t4, [2])
    big16 = c.tensor("input_int16", (1, 300, 300, 1), "int16", scale=0.001)
    t5 = c.tensor("mean_int16_90000", (1, 1, 1, 1), "int16", scale=0.001)
    c.mean(big16, t5, [1, 2])
    big8 = c.tensor("input_big", (1, 300, 300, 1))
    t6 = c.tensor("softmax_90000", (1, 300, 300, 1), scale=1.0 / 256, zero_point=-128)
    c.softmax(big8, t6)
    small = c.tensor("input_vec", (1, 64))
    t7 = c.tensor("fc", (1, 10))
    c.fully_connected(small, t7, 64, 10)
    t8 = c.tensor("softmax_10", (1, 10), scale=1.0 / 256, zero_point=-128)
    c.softmax(t7, t8)
    fx = c.tensor("input_float", (1, 8, 8, 4), "float32", scale=None)
    t9 = c.tensor("quantize", (1, 8, 8, 4))
    c.unary("QUANTIZE", fx, t9)
    t10 = c.tensor("conv_float", (1, 8, 8, 4), "float32", scale=None)
    c.conv(fx, t10, 3, 4, 4, 1, "SAME", float_=True)
    t11 = c.tensor("maxpool_relu", (1, 4, 4, 4))
    c.pool("MAX_POOL_2D", t9, t11, 2, 2, "VALID", act="RELU")
    col = c.tensor("input_column", (1, 300, 1, 1))
    t12 = c.tensor("maxpool_257x1", (1, 44, 1, 1))
    c.pool_hw("MAX_POOL_2D", col, t12, (257, 1), "VALID")
    t13 = c.tensor("maxpool_256x1", (1, 45, 1, 1))
    c.pool_hw("MAX_POOL_2D", col, t13, (256, 1), "VALID")
    t14 = c.tensor("tconv_s2_same_out15", (1, 15, 15, 4))
    c.transpose_conv(t9, t14, (1, 15, 15, 4), 3, 4, 4, 2)
    return c.build(
        [x, wide, row, big16, big8, small, fx, col],
        [t1, t2, t3, t4, t5, t6, t8, t10, t11, t12, t13, t14],
        "limits_int8",
    )


def edgetpu_int8_model() -> bytes:
    """conv -> PAD over channels -> conv -> STRIDED_SLICE (stride 2) -> conv: two ops the
    Edge TPU table rejects (PAD x/y only, STRIDED_SLICE strides 1) between supported ones."""
    c = Craft()
    x = c.tensor("input", (1, 16, 16, 8))
    t1 = c.tensor("conv_a", (1, 16, 16, 8))
    c.conv(x, t1, 3, 8, 8, 1, "SAME", "RELU")
    t2 = c.tensor("pad_hw", (1, 18, 18, 8))
    c.pad(t1, t2, [[0, 0], [1, 1], [1, 1], [0, 0]])
    t3 = c.tensor("conv_b", (1, 16, 16, 8))
    c.conv(t2, t3, 3, 8, 8, 1, "VALID")
    t4 = c.tensor("slice_s1", (1, 8, 16, 8))
    c.strided_slice(t3, t4, [0, 0, 0, 0], [1, 8, 16, 8], [1, 1, 1, 1])
    t5 = c.tensor("slice_s2", (1, 4, 8, 8))
    c.strided_slice(t4, t5, [0, 0, 0, 0], [1, 8, 16, 8], [1, 2, 2, 1])
    t6 = c.tensor("conv_c", (1, 4, 8, 8))
    c.conv(t5, t6, 1, 8, 8, 1, "SAME")
    t7 = c.tensor("pad_channels", (1, 4, 8, 10))
    c.pad(t6, t7, [[0, 0], [0, 0], [0, 0], [1, 1]])
    t8 = c.tensor("conv_d", (1, 4, 8, 8))
    c.conv(t7, t8, 1, 8, 10, 1, "SAME")
    return c.build([x], [t8], "edgetpu_int8")


def zero_point_model() -> bytes:
    """ADDs of int32 feature maps: one with zero point 0, one with zero point 3 (Vela: int32
    zero points must be 0)."""
    c = Craft()
    a = c.tensor("a", (1, 4, 4, 2), "int32", scale=1.0)
    b = c.tensor("b", (1, 4, 4, 2), "int32", scale=1.0)
    s0 = c.tensor("add_int32_zp0", (1, 4, 4, 2), "int32", scale=1.0)
    c.add(a, b, s0)
    az = c.tensor("a_zp3", (1, 4, 4, 2), "int32", scale=1.0, zero_point=3)
    s3 = c.tensor("add_int32_zp3", (1, 4, 4, 2), "int32", scale=1.0, zero_point=3)
    c.add(az, s0, s3)
    return c.build([a, b, az], [s3], "zero_point")


def nxp_semantics_model() -> bytes:
    """What NXP's Vela 3.7 leaves on the CPU: ARG_MAX along the depth of a 4-D map
    ("argmax_depth") and of a 2-D one ("argmax_2d"); an ADD whose output has neither input's
    shape ("add_both_broadcast": 1x4x4x1 + 1x1x1x8) or one of them ("add_row"); an ADD of a
    rank-0 map ("add_scalar")."""
    c = Craft()
    x = c.tensor("x", (1, 4, 4, 8))
    am = c.tensor("argmax_depth", (1, 4, 4), "int32", scale=None)
    o = S.ArgMaxOptionsT()
    o.outputType = S.TensorType.INT32
    c.op("ARG_MAX", [x, c.const("axis3", [3])], [am], S.BuiltinOptions.ArgMaxOptions, o)
    v = c.tensor("v", (1, 16))
    a2 = c.tensor("argmax_2d", (1,), "int32", scale=None)
    c.op("ARG_MAX", [v, c.const("axis1", [1])], [a2], S.BuiltinOptions.ArgMaxOptions, o)
    col = c.tensor("col", (1, 4, 4, 1))
    row = c.tensor("row", (1, 1, 1, 8))
    both = c.tensor("add_both_broadcast", (1, 4, 4, 8))
    c.add(col, row, both)
    one = c.tensor("add_row", (1, 4, 4, 8))
    c.add(both, row, one)
    sc = c.tensor("sc", ())
    s = c.tensor("add_scalar", ())
    c.add(sc, sc, s)
    return c.build([x, v, col, row, sc], [am, a2, one, s], "nxp_semantics")


# --------------------------------------------------------------------------- #
# ONNX: single-node models with exact properties (checked by onnx and run by ORT)
# --------------------------------------------------------------------------- #


def _onnx_model(
    nodes: list[Any], inputs: list[Any], outputs: list[Any], inits: list[Any] | None = None
) -> bytes:
    import onnx
    from onnx import helper

    g = helper.make_graph(nodes, "crafted", inputs, outputs, initializer=inits or [])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return bytes(m.SerializeToString())


def onnx_models() -> dict[str, bytes]:
    """name -> ONNX bytes, one property each (int64 input, rank 7, a 70000-wide map, ...)."""
    from onnx import TensorProto as T
    from onnx import helper, numpy_helper

    vi = helper.make_tensor_value_info
    rng = np.random.default_rng(0)
    w_group2 = numpy_helper.from_array(rng.standard_normal((4, 2, 3, 3)).astype(np.float32), "W")
    w_dw = numpy_helper.from_array(rng.standard_normal((4, 1, 3, 3)).astype(np.float32), "W")
    return {
        "add_int64": _onnx_model(
            [helper.make_node("Add", ["a", "b"], ["y"])],
            [vi("a", T.INT64, [1, 4]), vi("b", T.INT64, [1, 4])],
            [vi("y", T.INT64, [1, 4])],
        ),
        "mul_broadcast": _onnx_model(
            [helper.make_node("Mul", ["a", "b"], ["y"])],
            [vi("a", T.FLOAT, [1, 4, 4, 4]), vi("b", T.FLOAT, [4, 1, 1])],
            [vi("y", T.FLOAT, [1, 4, 4, 4])],
        ),
        "add_rank7": _onnx_model(
            [helper.make_node("Add", ["a", "b"], ["y"])],
            [vi("a", T.FLOAT, [1, 1, 1, 1, 1, 1, 2]), vi("b", T.FLOAT, [1, 1, 1, 1, 1, 1, 2])],
            [vi("y", T.FLOAT, [1, 1, 1, 1, 1, 1, 2])],
        ),
        "add_outer_dims": _onnx_model(
            [helper.make_node("Add", ["a", "b"], ["y"])],
            [vi("a", T.FLOAT, [2, 3, 4, 5]), vi("b", T.FLOAT, [2, 3, 4, 5])],
            [vi("y", T.FLOAT, [2, 3, 4, 5])],
        ),
        "relu_wide": _onnx_model(
            [helper.make_node("Relu", ["x"], ["y"])],
            [vi("x", T.FLOAT, [1, 1, 1, 70000])],
            [vi("y", T.FLOAT, [1, 1, 1, 70000])],
        ),
        "conv_group2_dilated_batch2_bias_input": _onnx_model(
            [
                helper.make_node(
                    "Conv", ["x", "W", "B"], ["y"], group=2, dilations=[2, 2], pads=[2, 2, 2, 2]
                )
            ],
            [vi("x", T.FLOAT, [2, 4, 8, 8]), vi("B", T.FLOAT, [4])],
            [vi("y", T.FLOAT, [2, 4, 8, 8])],
            [w_group2],
        ),
        "dwconv_batch2": _onnx_model(
            [helper.make_node("Conv", ["x", "W"], ["y"], group=4, pads=[1, 1, 1, 1])],
            [vi("x", T.FLOAT, [2, 4, 8, 8])],
            [vi("y", T.FLOAT, [2, 4, 8, 8])],
            [w_dw],
        ),
        "reshape_runtime_shape": _onnx_model(
            [helper.make_node("Reshape", ["x", "shape"], ["y"])],
            [vi("x", T.FLOAT, [2, 6]), vi("shape", T.INT64, [2])],
            [vi("y", T.FLOAT, ["r0", "r1"])],
        ),
        "matmul_runtime_weights": _onnx_model(
            [helper.make_node("MatMul", ["a", "b"], ["y"])],
            [vi("a", T.FLOAT, [3, 4]), vi("b", T.FLOAT, [4, 5])],
            [vi("y", T.FLOAT, [3, 5])],
        ),
        "nonzero": _onnx_model(
            [helper.make_node("NonZero", ["x"], ["y"])],
            [vi("x", T.FLOAT, [2, 3])],
            [vi("y", T.INT64, [2, "n"])],
        ),
        "conv_big_map": _onnx_model(
            [helper.make_node("Conv", ["x", "W"], ["y"], pads=[1, 1, 1, 1])],
            [vi("x", T.FLOAT, [1, 4, 200, 200])],
            [vi("y", T.FLOAT, [1, 64, 200, 200])],
            [numpy_helper.from_array(rng.standard_normal((64, 4, 3, 3)).astype(np.float32), "W")],
        ),
    }


ONNX_FEEDS: dict[str, dict[str, Any]] = {
    "reshape_runtime_shape": {"shape": np.array([3, 4], np.int64)},
}


def run_onnx(name: str, data: bytes) -> None:
    """Run a crafted ONNX model once in ONNX Runtime (random inputs)."""
    import onnxruntime as ort

    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    feeds: dict[str, Any] = {}
    for i in sess.get_inputs():
        if i.name in ONNX_FEEDS.get(name, {}):
            feeds[i.name] = ONNX_FEEDS[name][i.name]
            continue
        dtype = {"tensor(float)": np.float32, "tensor(int64)": np.int64}[i.type]
        feeds[i.name] = np.ones(i.shape, dtype)
    sess.run(None, feeds)


def batch_to_space_model() -> bytes:
    """Two BATCH_TO_SPACE_ND of one 4 x 33 x 33 x 8 map with blocks 2 x 2: "b2s_cropped"
    crops a row and a column (65 x 65, a TF1 dilated conv's closing step on an odd map),
    "b2s_whole" crops nothing (66 x 66)."""
    c = Craft()
    x = c.tensor("x", (4, 33, 33, 8))
    block = c.const("block", [2, 2])
    outs = []
    for name, crops, hw in (
        ("b2s_cropped", [[0, 1], [0, 1]], 65),
        ("b2s_whole", [[0, 0], [0, 0]], 66),
    ):
        out = c.tensor(name, (1, hw, hw, 8))
        c.op(
            "BATCH_TO_SPACE_ND",
            [x, block, c.const(f"{name}_crops", crops)],
            [out],
            S.BuiltinOptions.BatchToSpaceNDOptions,
            S.BatchToSpaceNDOptionsT(),
        )
        outs.append(out)
    return c.build([x], outs, "batch_to_space")


TFLITE_MODELS = {
    "mixed_int8": mixed_int8_model,
    "limits_int8": limits_int8_model,
    "edgetpu_int8": edgetpu_int8_model,
    "zero_point": zero_point_model,
    "nxp_semantics": nxp_semantics_model,
    "batch_to_space": batch_to_space_model,
}


def write_all(directory: Any) -> dict[str, Any]:
    """Write every crafted model into ``directory``; name -> path."""
    from pathlib import Path

    d = Path(directory)
    out = {}
    for name, build in TFLITE_MODELS.items():
        p = d / f"{name}.tflite"
        p.write_bytes(build())
        out[name] = p
    for name, data in onnx_models().items():
        p = d / f"{name}.onnx"
        p.write_bytes(data)
        out[name] = p
    return out


def test_crafted_tflite_models_run_in_litert() -> None:
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    for name, build in TFLITE_MODELS.items():
        it = Interpreter(
            model_content=build(),
            experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
        )
        it.allocate_tensors()
        it.invoke()
        assert it.get_output_details(), name


def test_crafted_onnx_models_run_in_onnxruntime() -> None:
    for name, data in onnx_models().items():
        run_onnx(name, data)
