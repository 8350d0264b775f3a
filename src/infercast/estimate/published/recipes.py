"""Architectures of the published device measurements, built with random weights.

Each recipe builds one architecture the way a published row describes it:
``keras.applications`` with ``weights=None`` where Keras has it, otherwise
layer by layer from the paper or the reference code named in its docstring.
Weights are random (seeded): latency does not depend on their values, only on
shapes, dtypes and the quantisation scheme.

Quantisation variants (the ``quant`` column of the published data):

* ``fp32``  -- the TFLite converter, no optimisation;
* ``int8``  -- full-integer post-training quantisation with the converter's
  defaults: int8 activations, **per-channel** int8 weights (what the TF2
  converter writes, and what NXP's eIQ model zoo ships);
* ``int8fio`` -- the same with float32 input and output (the converter adds a QUANTIZE
  and a DEQUANTIZE at the model's edges);
* ``int8u8f`` -- the same with uint8 input and float32 output (a uint8 -> int8 QUANTIZE at
  the input, a DEQUANTIZE at the output: what NXP's eIQ recipes write for FaceNet512,
  deepface-emotion and Ultraface, ``inference_input_type = tf.uint8``);
* ``int8pt`` -- ``int8``  with per-channel quantisation disabled
  (``_experimental_disable_per_channel``): **per-tensor** int8 weights;
* ``uint8`` -- the legacy (TF1) converter with ``inference_type=uint8`` and
  dummy ranges: uint8 activations and per-tensor uint8 weights, the format of
  the TF-hosted ``*_quant.tflite`` models (quantisation-aware training).

A model may set ``float_ops`` (TFLite op names): in the int8 variants those ops stay
float32 between DEQUANTIZE and QUANTIZE and the output is float32, as in a shipped file
with an in-graph float post-processing; a uint8 model input stays uint8 (calibrated with
uint8 samples).

TensorFlow is imported lazily: importing this module never needs it.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

QUANTS = ("fp32", "int8", "int8fio", "int8u8f", "int8pt", "uint8")
SEED = 0


@dataclass(frozen=True)
class Recipe:
    name: str
    build: Callable[..., Any]
    """Returns a Keras model with a static batch-1 input."""
    kwargs: dict[str, Any] = field(default_factory=dict)
    source: str = ""


# --------------------------------------------------------------------------- #
# Layer helpers (Keras functional API; imported lazily)
# --------------------------------------------------------------------------- #


def _k() -> Any:
    import keras

    return keras


def _input(shape: tuple[int, ...]) -> Any:
    return _k().Input(shape=shape, batch_size=1, name="input")


def _conv_bn(x: Any, filters: int, k: int | tuple[int, int], s: int = 1, act: str | None = "relu",
             dilation: int = 1, bn: bool = True, bias: bool = False,
             pad: str = "same") -> Any:  # fmt: skip
    L = _k().layers
    x = L.Conv2D(filters, k, strides=s, padding=pad, dilation_rate=dilation, use_bias=bias)(x)
    if bn:
        x = L.BatchNormalization()(x)
    return _act(x, act)


def _dw_bn(x: Any, k: int = 3, s: int = 1, act: str | None = "relu", dilation: int = 1,
           atrous_s2b: bool = False, pad: str = "same") -> Any:  # fmt: skip
    L = _k().layers
    if dilation > 1 and atrous_s2b:
        return _act(_atrous_dw_s2b(x, k, dilation), act)
    x = L.DepthwiseConv2D(k, strides=s, padding=pad, dilation_rate=dilation, use_bias=False)(x)
    x = L.BatchNormalization()(x)
    return _act(x, act)


def _atrous_dw_s2b(x: Any, k: int, rate: int) -> Any:
    """A dilated depthwise convolution as TensorFlow 1 graphs hold it
    (``tf.nn.depthwise_conv2d(rate=...)`` -> ``with_space_to_batch``): SPACE_TO_BATCH_ND by
    the rate, an undilated depthwise convolution on rate^2 batches, BATCH_TO_SPACE_ND, then
    the batch norm, which the converter cannot fold across BATCH_TO_SPACE_ND (a MUL). The
    converter fuses that pattern into one dilated convolution only when the inner
    convolution is VALID, so the inner one here is SAME on a map padded to a multiple of
    the rate."""
    import tensorflow as tf

    L = _k().layers
    h, w, c = (int(d) for d in x.shape[1:])
    ph, pw = -h % rate, -w % rate
    bh, bw = (h + ph) // rate, (w + pw) // rate
    pads = [[0, ph], [0, pw]]
    x = L.Lambda(lambda t: tf.space_to_batch_nd(t, [rate, rate], pads), output_shape=(bh, bw, c))(x)
    x = L.DepthwiseConv2D(k, padding="same", use_bias=False)(x)
    x = L.Lambda(lambda t: tf.batch_to_space(t, [rate, rate], pads), output_shape=(h, w, c))(x)
    return L.BatchNormalization()(x)


def _act(x: Any, act: str | None) -> Any:
    L = _k().layers
    if act is None:
        return x
    if act == "relu6":
        return L.ReLU(6.0)(x)
    if act.startswith("leaky"):
        return L.LeakyReLU(negative_slope=float(act.split(":")[1]))(x)
    return L.Activation(act)(x)


# --------------------------------------------------------------------------- #
# keras.applications
# --------------------------------------------------------------------------- #


def keras_app(cls: str, size: int, classes: int = 1000, **kw: Any) -> Any:
    """``keras.applications.<cls>(weights=None)`` at ``size`` x ``size`` x 3, batch 1."""
    k = _k()
    inp = _input((size, size, 3))
    return getattr(k.applications, cls)(input_tensor=inp, weights=None, classes=classes, **kw)


# --------------------------------------------------------------------------- #
# Layer by layer
# --------------------------------------------------------------------------- #


def ds_cnn() -> Any:
    """MLPerf Tiny keyword spotting DS-CNN (mlcommons/tiny ``keras_model.py``): input 49x10x1
    MFCCs, conv 10x4/2 64 ch, four depthwise-separable blocks of 64 ch, average pool, FC 12."""
    L = _k().layers
    inp = _input((49, 10, 1))
    x = _conv_bn(inp, 64, (10, 4), 2)
    for _ in range(4):
        x = _dw_bn(x)
        x = _conv_bn(x, 64, 1)
    x = L.AveragePooling2D(pool_size=(25, 5))(x)
    x = L.Flatten()(x)
    x = L.Dense(12, activation="softmax")(x)
    return _k().Model(inp, x)


def ad_autoencoder() -> Any:
    """MLPerf Tiny anomaly detection (ad01) deep auto-encoder (mlcommons/tiny
    ``keras_model.py``): 640 -> 4x (FC 128, BN, ReLU) -> FC 8 -> 4x FC 128 -> FC 640."""
    L = _k().layers
    inp = _input((640,))
    x = inp
    for units in (128, 128, 128, 128, 8, 128, 128, 128, 128):
        x = L.Dense(units)(x)
        x = L.BatchNormalization()(x)
        x = L.ReLU()(x)
    x = L.Dense(640)(x)
    return _k().Model(inp, x)


def wav2letter() -> Any:
    """Wav2Letter as Arm's ML-Zoo defines it (``models/speech_recognition/wav2letter/
    tflite_pruned_int8/recreate_model/wav2letter.py``, the model NXP's eIQ zoo times):
    input 296x39 MFCCs reshaped to 1x296x39; conv 1x48/2 250 ch; 7x conv 1x7 250 ch;
    conv 1x32 2000 ch; conv 1x1 2000 ch; conv 1x1 29 ch; leaky ReLU (0.2) after all but
    the last."""
    L = _k().layers
    inp = _input((296, 39))
    x = L.Reshape((1, 296, 39))(inp)
    x = L.Conv2D(250, (1, 48), strides=(1, 2), padding="same")(x)
    x = L.LeakyReLU(negative_slope=0.2)(x)
    for _ in range(7):
        x = L.Conv2D(250, (1, 7), padding="same")(x)
        x = L.LeakyReLU(negative_slope=0.2)(x)
    x = L.Conv2D(2000, (1, 32), padding="same")(x)
    x = L.LeakyReLU(negative_slope=0.2)(x)
    x = L.Conv2D(2000, (1, 1), padding="same")(x)
    x = L.LeakyReLU(negative_slope=0.2)(x)
    x = L.Conv2D(29, (1, 1), padding="same")(x)
    return _k().Model(inp, x)


def _inverted_residual(x: Any, cin: int, cout: int, expand: int, k: int, s: int,
                       act: str = "relu6", dilation: int = 1,
                       atrous_s2b: bool = False) -> Any:  # fmt: skip
    L = _k().layers
    y = x
    if expand != 1:
        y = _conv_bn(y, cin * expand, 1, act=act)
    y = _dw_bn(y, k, s, act=act, dilation=dilation, atrous_s2b=atrous_s2b)
    y = _conv_bn(y, cout, 1, act=None)
    if s == 1 and cin == cout:
        y = L.Add()([x, y])
    return y


def _make_div(v: float, d: int = 8) -> int:
    n = max(d, int(v + d / 2) // d * d)
    return n + d if n < 0.9 * v else n


_MNV2_TABLE = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
               (6, 160, 3, 2), (6, 320, 1, 1))  # fmt: skip
"""MobileNetV2 Table 2 (expansion, channels, repeats, stride) after the 32-ch stem."""


def deeplabv3_mnv2(size: int = 513, alpha: float = 0.5, output_stride: int = 8,
                   atrous_s2b: bool = False) -> Any:  # fmt: skip
    """DeepLabV3 with a MobileNetV2 backbone as in TensorFlow's DeepLab model zoo
    (``mobilenetv2_dm05_coco_voc_trainaug``: depth multiplier 0.5, evaluated at output
    stride 8; no ASPP rates and no decoder for MobileNet). Strides past the output stride
    become dilations (DeepLab's ``mobilenet_v2`` feature extractor); the head is DeepLab's
    default: an image-pooling branch and a 1x1 conv of 256 ch, concatenated, projected to
    256 ch, 21 logits, bilinear resize to the input size. This counts 2.86 G MACs at
    513x513; the zoo's table says 0.88 G and NXP's eIQ README 1.76 G ops, which only
    output stride 16 without the head would give. The eIQ CPU figures (1104 ms on one
    Cortex-A53, i.e. 2.6 GMAC/s at 2.86 G, the rate of its other models) support
    stride 8 with the head.

    ``atrous_s2b``: the dilated depthwise convolutions as the TensorFlow 1 export NXP's eIQ
    zoo ships holds them (TF Hub ``sayakpaul/lite-model/deeplabv3-mobilenetv2_dm05-int8``,
    the eIQ recipe's download; checked on a copy of that file in
    github.com/ruitaodong/imx-benchmarks: 10 SPACE_TO_BATCH_ND / DEPTHWISE_CONV_2D on
    batch 4 or 16 / BATCH_TO_SPACE_ND / MUL runs), see :func:`_atrous_dw_s2b`.
    """
    k = _k()
    L = k.layers
    inp = _input((size, size, 3))
    x = _conv_bn(inp, _make_div(32 * alpha), 3, 2, act="relu6")
    cin = _make_div(32 * alpha)
    stride, rate = 2, 1
    for t, c, n, s in _MNV2_TABLE:
        cout = _make_div(c * alpha)
        for i in range(n):
            si = s if i == 0 else 1
            if si > 1 and stride >= output_stride:
                d, si, rate = rate, 1, rate * si
            else:
                d = rate
                stride *= si
            x = _inverted_residual(x, cin, cout, t, 3, si, dilation=d, atrous_s2b=atrous_s2b)
            cin = cout
    hw = x.shape[1]
    pool = L.AveragePooling2D(pool_size=(hw, hw))(x)
    pool = _conv_bn(pool, 256, 1)
    pool = L.Resizing(hw, hw, interpolation="bilinear")(pool)
    branch = _conv_bn(x, 256, 1)
    x = L.Concatenate()([pool, branch])
    x = _conv_bn(x, 256, 1)
    x = L.Conv2D(21, 1)(x)
    x = L.Resizing(size, size, interpolation="bilinear")(x)
    return k.Model(inp, x)


def efficientnet_lite0() -> Any:
    """EfficientNet-Lite0 (tensorflow/tpu ``models/official/efficientnet/lite``): EfficientNet-B0's
    blocks without squeeze-excite, ReLU6 instead of swish, stem (32) and head (1280) fixed."""
    k = _k()
    L = k.layers
    inp = _input((224, 224, 3))
    x = _conv_bn(inp, 32, 3, 2, act="relu6")
    cin = 32
    for t, kk, s, c, n in ((1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3),
                           (6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1)):  # fmt: skip
        for i in range(n):
            x = _inverted_residual(x, cin, c, t, kk, s if i == 0 else 1)
            cin = c
    x = _conv_bn(x, 1280, 1, act="relu6")
    x = L.GlobalAveragePooling2D()(x)
    x = L.Dense(1000)(x)
    x = L.Softmax()(x)
    return k.Model(inp, x)


_EDGETPU_STAGES = (
    (1, 3, 1, 4, 24, 24, True, False),
    (2, 3, 2, 8, 24, 32, True, True),
    (4, 3, 2, 8, 32, 48, True, True),
    (5, 5, 2, 8, 48, 96, False, True),
    (4, 5, 1, 8, 96, 144, False, True),
    (2, 5, 2, 8, 144, 192, False, True),
)
"""EfficientNet-EdgeTPU's block strings as (repeats, kernel, stride, expand, in, out, fused,
skip): 'r1_k3_s11_e4_i24_o24_c1_noskip', 'r2_k3_s22_e8_i24_o32_c1', 'r4_k3_s22_e8_i32_o48_c1',
'r5_k5_s22_e8_i48_o96', 'r4_k5_s11_e8_i96_o144', 'r2_k5_s22_e8_i144_o192'."""


def efficientnet_edgetpu(size: int = 224, width: float = 1.0, depth: float = 1.0) -> Any:
    """EfficientNet-EdgeTPU as tensorflow/tpu builds it (``models/official/efficientnet/edgetpu/
    efficientnet_edgetpu_builder.py``: S = width 1.0, depth 1.0, 224 px; M = 1.0, 1.1, 240;
    L = 1.2, 1.4, 300; ``efficientnet_model.py``): a 3x3/2 stem to round_filters(32), the six
    stages of ``_EDGETPU_STAGES`` (filters rounded to 8 after the width, repeats ceil(depth x
    r)), ReLU, no squeeze-excite. A ``c1`` block is ``MBConvBlockWithoutDepthwise``: a 3x3
    stride-1 conv expands to input x expand filters and the 1x1 projection carries the stride;
    the others expand 1x1, run the k x k depthwise conv with the stride and project 1x1. An
    identity skip where the stride is 1 and the block's input and output filters are equal
    (the first block has none); head 1x1 conv to round_filters(1280), average pool, a
    1001-way FC and softmax (the background class)."""
    k = _k()
    L = k.layers

    def rf(c: int) -> int:
        return _make_div(c * width)

    inp = _input((size, size, 3))
    x = _conv_bn(inp, rf(32), 3, 2)
    for r, kk, s, e, cin, cout, fused, skip in _EDGETPU_STAGES:
        for j in range(math.ceil(depth * r)):
            stride = s if j == 0 else 1
            fin = rf(cin) if j == 0 else rf(cout)
            if fused:
                y = _conv_bn(x, fin * e, 3, 1)
                y = _conv_bn(y, rf(cout), 1, stride, act=None)
            else:
                y = _conv_bn(x, fin * e, 1)
                y = _dw_bn(y, kk, stride)
                y = _conv_bn(y, rf(cout), 1, act=None)
            x = L.Add()([x, y]) if skip and stride == 1 and fin == rf(cout) else y
    x = _conv_bn(x, rf(1280), 1)
    x = L.GlobalAveragePooling2D()(x)
    return k.Model(inp, L.Softmax()(L.Dense(1001)(x)))


def unet_mnv2(size: int = 128, classes: int = 3) -> Any:
    """The U-Net of TensorFlow's image-segmentation tutorial (tensorflow/docs
    ``site/en/tutorials/images/segmentation.ipynb``; Coral's
    ``keras_post_training_unet_mv2_128_quant``): a keras.applications MobileNetV2 encoder
    (``include_top=False``) cut at ``block_1_expand_relu`` (64x64), ``block_3_expand_relu``
    (32), ``block_6_expand_relu`` (16), ``block_13_expand_relu`` (8) and ``block_16_project``
    (4); a decoder of four ``pix2pix.upsample`` blocks (3x3 stride-2 Conv2DTranspose to 512,
    256, 128, 64 channels, no bias, batch norm, ReLU), each concatenated with the skip of its
    size; a last 3x3 stride-2 Conv2DTranspose to ``classes`` channels at full size."""
    k = _k()
    L = k.layers
    base = k.applications.MobileNetV2(input_shape=(size, size, 3), include_top=False,
                                      weights=None)  # fmt: skip
    names = ["block_1_expand_relu", "block_3_expand_relu", "block_6_expand_relu",
             "block_13_expand_relu", "block_16_project"]  # fmt: skip
    inp = _input((size, size, 3))
    skips = k.Model(base.input, [base.get_layer(n).output for n in names])(inp)
    x = skips[-1]
    for filters, skip in zip((512, 256, 128, 64), reversed(skips[:-1]), strict=True):
        x = L.Conv2DTranspose(filters, 3, strides=2, padding="same", use_bias=False)(x)
        x = L.ReLU()(L.BatchNormalization()(x))
        x = L.Concatenate()([x, skip])
    out = L.Conv2DTranspose(classes, 3, strides=2, padding="same")(x)
    return k.Model(inp, out)


def yolov4_tiny(size: int = 416) -> Any:
    """YOLOv4-tiny as AlexeyAB/darknet ``cfg/yolov4-tiny.cfg`` defines it (80 classes, leaky
    ReLU 0.1): CSP blocks that route the second half of the channels (``groups=2
    group_id=1``), max pools, two YOLO heads (13x13 and 26x26 at 416)."""
    k = _k()
    L = k.layers
    leaky = "leaky:0.1"
    inp = _input((size, size, 3))
    x = _conv_bn(inp, 32, 3, 2, act=leaky)
    x = _conv_bn(x, 64, 3, 2, act=leaky)
    route_26 = None
    for c in (64, 128, 256):
        x = _conv_bn(x, c, 3, act=leaky)
        big = x
        half = L.Lambda(lambda t, c=c: t[..., c // 2 :])(x)
        a = _conv_bn(half, c // 2, 3, act=leaky)
        b = _conv_bn(a, c // 2, 3, act=leaky)
        x = L.Concatenate()([b, a])
        x = _conv_bn(x, c, 1, act=leaky)
        if c == 256:
            route_26 = x
        x = L.Concatenate()([big, x])
        x = L.MaxPooling2D(2, 2)(x)
    x = _conv_bn(x, 512, 3, act=leaky)
    x13 = _conv_bn(x, 256, 1, act=leaky)
    y = _conv_bn(x13, 512, 3, act=leaky)
    out13 = L.Conv2D(255, 1)(y)
    y = _conv_bn(x13, 128, 1, act=leaky)
    y = L.UpSampling2D(2)(y)
    y = L.Concatenate()([y, route_26])
    y = _conv_bn(y, 256, 3, act=leaky)
    out26 = L.Conv2D(255, 1)(y)
    return k.Model(inp, [out13, out26])


def yolov3_tiny(size: int = 416, classes: int = 80) -> Any:
    """YOLOv3-tiny as darknet's ``cfg/yolov3-tiny.cfg`` defines it (leaky ReLU 0.1): six
    3x3 convs with max pools (the last one stride 1), 1024 and 256 ch at 13x13, two YOLO
    heads (13x13 and 26x26) with 3 x (5 + classes) outputs; darknet's ``[upsample]`` as a
    nearest resize (what tf.keras 2's UpSampling2D converts to: RESIZE_NEAREST_NEIGHBOR)."""
    k = _k()
    L = k.layers
    leaky = "leaky:0.1"
    x = inp = _input((size, size, 3))
    route_26 = None
    for c in (16, 32, 64, 128, 256):
        x = _conv_bn(x, c, 3, act=leaky)
        route_26 = x
        x = L.MaxPooling2D(2, 2, padding="same")(x)
    x = _conv_bn(x, 512, 3, act=leaky)
    x = L.MaxPooling2D(2, 1, padding="same")(x)
    x = _conv_bn(x, 1024, 3, act=leaky)
    x13 = _conv_bn(x, 256, 1, act=leaky)
    out13 = L.Conv2D(3 * (5 + classes), 1)(_conv_bn(x13, 512, 3, act=leaky))
    y = _conv_bn(x13, 128, 1, act=leaky)
    y = L.Resizing(2 * int(y.shape[1]), 2 * int(y.shape[2]), interpolation="nearest")(y)
    y = _conv_bn(L.Concatenate()([y, route_26]), 256, 3, act=leaky)
    out26 = L.Conv2D(3 * (5 + classes), 1)(y)
    return k.Model(inp, [out13, out26])


def resnet18(size: int = 224) -> Any:
    """ResNet-18 (He et al. 2016, Table 1; torchvision's layout): 7x7/2 conv, max pool,
    four stages of two basic blocks (64, 128, 256, 512 ch), average pool, FC 1000."""
    k = _k()
    L = k.layers
    inp = _input((size, size, 3))
    x = _conv_bn(inp, 64, 7, 2)
    x = L.MaxPooling2D(3, 2, padding="same")(x)
    cin = 64
    for c in (64, 128, 256, 512):
        for i in range(2):
            s = 2 if (i == 0 and c != 64) else 1
            y = _conv_bn(x, c, 3, s)
            y = _conv_bn(y, c, 3, act=None)
            sc = _conv_bn(x, c, 1, s, act=None) if (s != 1 or cin != c) else x
            x = L.ReLU()(L.Add()([y, sc]))
            cin = c
    x = L.GlobalAveragePooling2D()(x)
    x = L.Dense(1000, activation="softmax")(x)
    return k.Model(inp, x)


def squeezenet_v1_1(size: int = 224) -> Any:
    """SqueezeNet v1.1 (forresti/SqueezeNet ``SqueezeNet_v1.1``): 3x3/2 conv 64, eight fire
    modules (squeeze 16..64, expand 64..256 split 1x1 / 3x3), three max pools, 1x1 conv to
    1000 classes, global average pool."""
    k = _k()
    L = k.layers
    inp = _input((size, size, 3))
    x = _conv_bn(inp, 64, 3, 2, bn=False, bias=True)
    for i, (sq, ex) in enumerate(((16, 64), (16, 64), (32, 128), (32, 128), (48, 192),
                                  (48, 192), (64, 256), (64, 256))):  # fmt: skip
        if i in (0, 2, 4):
            x = L.MaxPooling2D(3, 2)(x)
        s = _conv_bn(x, sq, 1, bn=False, bias=True)
        x = L.Concatenate()(
            [_conv_bn(s, ex, 1, bn=False, bias=True), _conv_bn(s, ex, 3, bn=False, bias=True)]
        )
    x = _conv_bn(x, 1000, 1, bn=False, bias=True)
    x = L.GlobalAveragePooling2D()(x)
    x = L.Softmax()(x)
    return k.Model(inp, x)


def mobilenet_ssd(size: int = 300, classes: int = 21) -> Any:
    """MobileNet-SSD as in chuanqi305/MobileNet-SSD (the model ncnn's ``benchncnn``
    times): MobileNet v1 (1.0) backbone, extra layers 14..17 (1x1 then 3x3/2 convs),
    box heads (1x1 convs for locations and class scores) on six maps; no
    detection output."""
    k = _k()
    L = k.layers
    inp = _input((size, size, 3))
    x = _conv_bn(inp, 32, 3, 2)
    feats = []
    for i, (c, s) in enumerate(((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2),
                                (512, 1), (512, 1), (512, 1), (512, 1), (512, 1), (1024, 2),
                                (1024, 1))):  # fmt: skip
        x = _dw_bn(x, 3, s)
        x = _conv_bn(x, c, 1)
        if i in (10, 12):
            feats.append(x)
    for c1, c2 in ((256, 512), (128, 256), (128, 256), (64, 128)):
        x = _conv_bn(x, c1, 1)
        x = _conv_bn(x, c2, 3, 2)
        feats.append(x)
    outs = []
    for i, f in enumerate(feats):
        boxes = 3 if i == 0 else 6
        outs.append(L.Flatten()(L.Conv2D(boxes * 4, 1)(f)))
        outs.append(L.Flatten()(L.Conv2D(boxes * classes, 1)(f)))
    return k.Model(inp, [L.Concatenate()(outs[0::2]), L.Concatenate()(outs[1::2])])


def _ssd_anchor_boxes(maps: list[int], per_map: list[int]) -> Any:
    """Anchor boxes (ycenter, xcenter, h, w), one row per box in the head's order: a fixed
    grid of centres per feature map (the values do not change the cost; the count does)."""
    import numpy as np

    rows = []
    for m, a in zip(maps, per_map, strict=True):
        c = (np.arange(m) + 0.5) / m
        yy, xx = np.meshgrid(c, c, indexing="ij")
        for y, x in zip(yy.ravel(), xx.ravel(), strict=True):
            for i in range(a):
                s = 0.2 + 0.7 * i / max(a - 1, 1)
                rows.append((y, x, s, s))
    return np.asarray(rows, dtype=np.float32)


def _ssd_head_postprocess(inp: Any, feats: list[Any], classes: int) -> Any:
    """TF1 Object Detection API SSD head as its TFLite exporter writes it: 1x1 box and class
    convs (``ConvolutionalBoxPredictor`` with ``kernel_size: 1``; 3 anchors on the first map,
    6 on the others; ``classes`` + background scores), the sigmoid score conversion, and the
    ``TFLite_Detection_PostProcess`` settings of the exporter's defaults (10 detections, one
    class each, fast NMS, IoU 0.6, score threshold 1e-8, scales 10 / 10 / 5 / 5) on an
    anchors constant with one row per box (see :func:`_convert_with_postprocess`)."""
    k = _k()
    L = k.layers
    # every head conv before the reshapes and concats: the converter orders the ops as built
    anchors_per_map = [3] + [6] * (len(feats) - 1)
    box_maps = [L.Conv2D(a * 4, 1)(f) for a, f in zip(anchors_per_map, feats, strict=True)]
    cls_maps = [
        L.Conv2D(a * (classes + 1), 1)(f) for a, f in zip(anchors_per_map, feats, strict=True)
    ]
    box = L.Concatenate(axis=1, name="box_encodings")([L.Reshape((-1, 4))(m) for m in box_maps])
    cls = L.Activation("sigmoid", name="class_predictions")(
        L.Concatenate(axis=1)([L.Reshape((-1, classes + 1))(m) for m in cls_maps])
    )
    model = k.Model(inp, [box, cls])
    maps = [int(f.shape[1]) for f in feats]
    model.postprocess = {
        "anchors": _ssd_anchor_boxes(maps, anchors_per_map),
        "max_detections": 10, "max_classes_per_detection": 1, "detections_per_class": 100,
        "use_regular_nms": False, "nms_score_threshold": 1e-8, "nms_iou_threshold": 0.6,
        "num_classes": classes, "y_scale": 10.0, "x_scale": 10.0, "h_scale": 5.0, "w_scale": 5.0,
    }  # fmt: skip
    return model


def _ssd_extra_layers(x: Any, feats: list[Any]) -> None:
    """The SSD feature extractors' four extra maps of depth 512 / 256 / 256 / 128: a 1x1 conv
    to half the depth, then a 3x3/2 conv (BN, ReLU6; ``use_depthwise`` false)."""
    for d in (512, 256, 256, 128):
        x = _conv_bn(_conv_bn(x, d // 2, 1, act="relu6"), d, 3, 2, act="relu6")
        feats.append(x)


def ssd_mobilenet_v1_postprocess(size: int = 300, classes: int = 90) -> Any:
    """SSD MobileNet v1 as TF1's Object Detection API exports it for TFLite
    (``ssd_mobilenet_v1_coco`` / ``coco_ssd_mobilenet_v1_1.0_quant``, the model of Coral's
    ``ssd_mobilenet_v1_coco_quant_postprocess`` and of TF's detection example; tensorflow/models
    research/object_detection ``models/ssd_mobilenet_v1_feature_extractor.py``,
    ``export_tflite_ssd_graph_lib.py``): MobileNet v1 1.0 feature maps Conv2d_11 (19x19x512)
    and Conv2d_13 (10x10x1024), the four extra layers, and :func:`_ssd_head_postprocess`
    (1917 boxes at 300 px). Built here: 1.237 G MACs and 6.81 M parameters, the MobileNet
    paper's SSD 300 figures (Howard et al. 2017, Table 13: 1.2 B mult-adds, 6.8 M
    parameters)."""
    inp = _input((size, size, 3))
    x = _conv_bn(inp, 32, 3, 2, act="relu6")
    feats: list[Any] = []
    for i, (c, s) in enumerate(((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2),
                                (512, 1), (512, 1), (512, 1), (512, 1), (512, 1), (1024, 2),
                                (1024, 1))):  # fmt: skip
        x = _conv_bn(_dw_bn(x, 3, s, act="relu6"), c, 1, act="relu6")
        if i in (10, 12):
            feats.append(x)
    _ssd_extra_layers(x, feats)
    return _ssd_head_postprocess(inp, feats, classes)


def ssd_mobilenet_v2_postprocess(size: int = 300, classes: int = 90) -> Any:
    """SSD MobileNet v2 as TF1's Object Detection API exports it for TFLite
    (``ssd_mobilenet_v2_coco``, Coral's ``ssd_mobilenet_v2_coco_quant_postprocess``; at 320 px
    with one class, Coral's ``ssd_mobilenet_v2_face_quant_postprocess``;
    ``models/ssd_mobilenet_v2_feature_extractor.py``): MobileNetV2 1.0 feature maps the
    expansion output of layer 15 (576 channels) and the final 1x1 to 1280, the four extra
    layers, and :func:`_ssd_head_postprocess` (1917 boxes at 300 px, 2034 at 320)."""
    inp = _input((size, size, 3))
    x, feats = _mnv2_ssd_features(inp)
    _ssd_extra_layers(x, feats)
    return _ssd_head_postprocess(inp, feats, classes)


def posenet_mnv1_075(height: int = 353, width: int = 481) -> Any:
    """PoseNet MobileNet v1 0.75, output stride 16, as Coral ships it
    (google-coral/project-posenet ``models/mobilenet/components/
    posenet_mobilenet_v1_075_<h>_<w>_quant.tflite``, the network its ``*_decoder_edgetpu``
    files compile): MobileNet v1 at depth 0.75 (24 ... 384 channels, SAME padding, ReLU6) whose
    strides stop at 16, with Conv2d_12 and Conv2d_13 kept at 384 channels and no dilation, then
    four 1x1 heads: heatmaps (17), short offsets (34), backward and forward displacements
    (32 each, concatenated to the 64-channel ``concat`` output). At 353x481 this rebuild has
    the shipped file's 32 ops, 1.246 G MACs and 1.258 M parameters. The file's pose decoder
    (a custom ``PosenetDecoderOp`` on the CPU) is not rebuilt."""
    k = _k()
    L = k.layers
    inp = _input((height, width, 3))
    x = _conv_bn(inp, 24, 3, 2, act="relu6")
    for c, s in ((48, 1), (96, 2), (96, 1), (192, 2), (192, 1), (384, 2), (384, 1), (384, 1),
                 (384, 1), (384, 1), (384, 1), (384, 1), (384, 1)):  # fmt: skip
        x = _conv_bn(_dw_bn(x, 3, s, act="relu6"), c, 1, act="relu6")
    heat = L.Conv2D(17, 1, name="heatmaps")(x)
    short = L.Conv2D(34, 1, name="short_offsets")(x)
    bwd = L.Conv2D(32, 1, name="displacement_bwd")(x)
    fwd = L.Conv2D(32, 1, name="displacement_fwd")(x)
    return k.Model(inp, [heat, short, L.Concatenate(name="mid_offsets")([fwd, bwd])])


def _inception_branch(x: Any, spec: list[tuple[int, Any, int]]) -> Any:
    for c, kk, s in spec:
        x = _conv_bn(x, c, kk, s)
    return x


def inception_v1(size: int = 224) -> Any:
    """Inception v1 as TF-slim's ``inception_v1`` (the TF-hosted and Coral models): its
    "5x5" branches use 3x3 convs; 7x7/2 stem, nine mixed blocks, 1x1 logits (1001)."""
    k = _k()
    L = k.layers
    inp = _input((size, size, 3))
    x = _conv_bn(inp, 64, 7, 2)
    x = L.MaxPooling2D(3, 2, padding="same")(x)
    x = _conv_bn(x, 64, 1)
    x = _conv_bn(x, 192, 3)
    x = L.MaxPooling2D(3, 2, padding="same")(x)
    blocks: list[Any] = [(64, 96, 128, 16, 32, 32), (128, 128, 192, 32, 96, 64), None,
              (192, 96, 208, 16, 48, 64), (160, 112, 224, 24, 64, 64), (128, 128, 256, 24, 64, 64),
              (112, 144, 288, 32, 64, 64), (256, 160, 320, 32, 128, 128), "pool2",
              (256, 160, 320, 32, 128, 128), (384, 192, 384, 48, 128, 128)]  # fmt: skip
    for b in blocks:
        if b is None:
            x = L.MaxPooling2D(3, 2, padding="same")(x)
            continue
        if b == "pool2":
            x = L.MaxPooling2D(2, 2, padding="same")(x)
            continue
        c0, c1a, c1b, c2a, c2b, c3 = b
        p = L.MaxPooling2D(3, 1, padding="same")(x)
        x = L.Concatenate()([
            _conv_bn(x, c0, 1),
            _inception_branch(x, [(c1a, 1, 1), (c1b, 3, 1)]),
            _inception_branch(x, [(c2a, 1, 1), (c2b, 3, 1)]),
            _conv_bn(p, c3, 1),
        ])  # fmt: skip
    x = L.GlobalAveragePooling2D(keepdims=True)(x)
    x = L.Conv2D(1001, 1)(x)
    x = L.Flatten()(x)
    x = L.Softmax()(x)
    return k.Model(inp, x)


def inception_v4(size: int = 299) -> Any:
    """Inception v4 (Szegedy et al. 2017, Figs. 3-9; TF-slim ``inception_v4``): stem,
    4x Inception-A, Reduction-A, 7x Inception-B, Reduction-B, 3x Inception-C, average
    pool, FC 1001."""
    k = _k()
    L = k.layers
    valid = "valid"

    def cv(x: Any, c: int, kk: Any, s: int = 1, pad: str = "same") -> Any:
        x = L.Conv2D(c, kk, strides=s, padding=pad, use_bias=False)(x)
        return L.ReLU()(L.BatchNormalization()(x))

    inp = _input((size, size, 3))
    x = cv(inp, 32, 3, 2, valid)
    x = cv(x, 32, 3, 1, valid)
    x = cv(x, 64, 3)
    x = L.Concatenate()([L.MaxPooling2D(3, 2, valid)(x), cv(x, 96, 3, 2, valid)])
    a = cv(cv(x, 64, 1), 96, 3, 1, valid)
    b = cv(cv(cv(cv(x, 64, 1), 64, (1, 7)), 64, (7, 1)), 96, 3, 1, valid)
    x = L.Concatenate()([a, b])
    x = L.Concatenate()([cv(x, 192, 3, 2, valid), L.MaxPooling2D(3, 2, valid)(x)])
    for _ in range(4):  # Inception-A
        p = L.AveragePooling2D(3, 1, "same")(x)
        x = L.Concatenate()([
            cv(x, 96, 1), cv(cv(x, 64, 1), 96, 3), cv(cv(cv(x, 64, 1), 96, 3), 96, 3), cv(p, 96, 1)
        ])  # fmt: skip
    x = L.Concatenate()([  # Reduction-A
        cv(x, 384, 3, 2, valid), cv(cv(cv(x, 192, 1), 224, 3), 256, 3, 2, valid),
        L.MaxPooling2D(3, 2, valid)(x),
    ])  # fmt: skip
    for _ in range(7):  # Inception-B
        p = L.AveragePooling2D(3, 1, "same")(x)
        x = L.Concatenate()([
            cv(x, 384, 1),
            cv(cv(cv(x, 192, 1), 224, (1, 7)), 256, (7, 1)),
            cv(cv(cv(cv(cv(x, 192, 1), 192, (7, 1)), 224, (1, 7)), 224, (7, 1)), 256, (1, 7)),
            cv(p, 128, 1),
        ])  # fmt: skip
    x = L.Concatenate()([  # Reduction-B
        cv(cv(x, 192, 1), 192, 3, 2, valid),
        cv(cv(cv(cv(x, 256, 1), 256, (1, 7)), 320, (7, 1)), 320, 3, 2, valid),
        L.MaxPooling2D(3, 2, valid)(x),
    ])  # fmt: skip
    for _ in range(3):  # Inception-C
        p = L.AveragePooling2D(3, 1, "same")(x)
        b1 = cv(x, 384, 1)
        b2 = cv(cv(cv(x, 384, 1), 448, (1, 3)), 512, (3, 1))
        x = L.Concatenate()([
            cv(x, 256, 1), cv(b1, 256, (1, 3)), cv(b1, 256, (3, 1)),
            cv(b2, 256, (3, 1)), cv(b2, 256, (1, 3)), cv(p, 256, 1),
        ])  # fmt: skip
    x = L.GlobalAveragePooling2D()(x)
    x = L.Dense(1001, activation="softmax")(x)
    return k.Model(inp, x)


def conv3x3(size: int, channels: int = 128) -> Any:
    """One 3x3 convolution, ``channels`` -> ``channels``, on a ``size`` x ``size`` map (the K210
    KPU micro-benchmark of bbs.sipeed.com/t/topic/691)."""
    k = _k()
    inp = _input((size, size, channels))
    x = k.layers.Conv2D(channels, 3, padding="same")(inp)
    return k.Model(inp, x)


RECIPES: dict[str, Recipe] = {}


def _r(name: str, build: Callable[..., Any], source: str = "", **kwargs: Any) -> None:
    RECIPES[name] = Recipe(name, build, kwargs, source)


def _squeeze_excite(x: Any, reduced: int) -> Any:
    """Squeeze-and-excite as tensorflow/tpu's MnasNet block has it: spatial mean (kept 1x1),
    1x1 conv with bias to ``reduced`` ch + ReLU, 1x1 conv with bias back + sigmoid, times
    ``x``."""
    L = _k().layers
    c = int(x.shape[-1])
    s = L.GlobalAveragePooling2D(keepdims=True)(x)
    s = L.Conv2D(reduced, 1, activation="relu")(s)
    s = L.Conv2D(c, 1, activation="sigmoid")(s)
    return L.Multiply()([x, s])


def mnasnet_a1(size: int = 224, depth: float = 0.75) -> Any:
    """MnasNet-A1 (Tan et al. 2019, Fig. 7) as tensorflow/tpu builds it
    (``models/official/mnasnet/mnasnet_models.py`` ``mnasnet_a1`` block strings,
    ``mnasnet_model.py`` ``MnasBlock`` / ``round_filters``), the model of the
    ``cloud-tpu-checkpoints/mnasnet/mnasnet-a1-075`` SavedModel that NXP's eIQ zoo
    (``tasks/vision/classification/MNasNet``) converts: ReLU everywhere; channels times
    ``depth`` rounded to multiples of 8 (never down by more than 10 %), stem 3x3/2 of
    round(32), head 1x1 of 1280 (not scaled), average pool, FC 1000, softmax; squeeze-excite
    (ratio 0.25 of the block's *input* channels, ReLU / sigmoid) in the 40-, 112- and
    160-channel stages; identity skip when stride 1 and channels equal (not in the first
    block, ``noskip``). The SavedModel's ``classify`` signature (``mnasnet_main.py``
    ``mnasnet_model_fn``) takes raw [0, 255] RGB, subtracts the ImageNet mean and divides by
    the std in the graph, and outputs ``classes`` (ARG_MAX) and ``probabilities``; both are
    kept. This builds 2.94 M params (2.91 M trainable) and 223.4 M MACs (448 M FLOPs) at
    0.75 / 224; the tpu README's table says 2.9 M / 226.7 M Multi-Adds (1.5 % more: how it
    counts the squeeze-excite and element-wise work is not stated), the eIQ README 2.9 M /
    447 MOPS (2 ops per MAC)."""
    import tensorflow as tf

    k = _k()
    L = k.layers
    mean = [0.485 * 255, 0.456 * 255, 0.406 * 255]
    std = [0.229 * 255, 0.224 * 255, 0.225 * 255]

    def rf(c: int) -> int:
        return _make_div(c * depth)

    inp = _input((size, size, 3))
    x = L.Lambda(lambda t: (t - mean) / std, output_shape=(size, size, 3))(inp)
    x = _conv_bn(x, rf(32), 3, 2)
    # (repeats, kernel, stride, expansion, in, out, se ratio) -- mnasnet_a1 block strings
    for r, kk, s, e, ci, co, se in ((1, 3, 1, 1, 32, 16, 0.0), (2, 3, 2, 6, 16, 24, 0.0),
                                    (3, 5, 2, 3, 24, 40, 0.25), (4, 3, 2, 6, 40, 80, 0.0),
                                    (2, 3, 1, 6, 80, 112, 0.25), (3, 5, 2, 6, 112, 160, 0.25),
                                    (1, 3, 1, 6, 160, 320, 0.0)):  # fmt: skip
        cin, cout = rf(ci), rf(co)
        for i in range(r):
            y = _conv_bn(x, cin * e, 1) if e != 1 else x
            y = _dw_bn(y, kk, s if i == 0 else 1)
            if se:
                y = _squeeze_excite(y, max(1, int(cin * se)))
            y = _conv_bn(y, cout, 1, act=None)
            if (s == 1 or i > 0) and cin == cout:  # the noskip first block has 24 -> 16 ch
                y = L.Add()([x, y])
            x, cin = y, cout
    x = _conv_bn(x, 1280, 1)
    x = L.GlobalAveragePooling2D()(x)
    probs = L.Softmax()(L.Dense(1000)(x))
    classes = L.Lambda(lambda t: tf.argmax(t, axis=-1), output_shape=())(probs)
    return k.Model(inp, [classes, probs])


def facenet512(size: int = 160, dimension: int = 512) -> Any:
    """FaceNet512 as serengil/deepface builds it (``deepface/basemodels/Facenet.py``
    ``InceptionResNetV2(dimension=512)``, deepface 0.0.75 as the eIQ zoo's
    ``tasks/vision/face-recognition/facenet512/requirements.txt`` pins it; despite the
    name, Inception-ResNet-v1 of Szegedy et al. 2017, as in davidsandberg/facenet):
    160x160 RGB; stem 3x3/2 32 valid, 3x3 32 valid, 3x3 64, max pool 3/2, 1x1 80, 3x3 192
    valid, 3x3/2 256 valid; 5x Block35 (scale 0.17), Mixed_6a, 10x Block17 (0.1), Mixed_7a,
    5x Block8 (0.2) and a last Block8 without ReLU (scale 1); average pool, FC 512 without
    bias, batch norm (center only, as every BN there; the dropout before the FC is a no-op at
    inference). Each residual branch's 1x1 up-projection has a bias and is multiplied by its
    scale (``Lambda(scaling)``, which the converter folds into that conv), then added and
    ReLU'd.
    This builds 23,497,424 params (Keras' count, batch-norm statistics included) and
    1.418 G MACs (2.838 G FLOPs); the eIQ README says 23,497,424 params and 2.84 GOPS."""
    k = _k()
    L = k.layers
    valid = "valid"

    def cv(x: Any, c: int, kk: Any, s: int = 1, pad: str = "same") -> Any:
        x = L.Conv2D(c, kk, strides=s, padding=pad, use_bias=False)(x)
        return L.ReLU()(L.BatchNormalization(momentum=0.995, epsilon=1e-3, scale=False)(x))

    def residual(x: Any, branches: list[Any], scale: float, relu: bool = True) -> Any:
        up = L.Conv2D(int(x.shape[-1]), 1, use_bias=True)(L.Concatenate()(branches))
        up = L.Lambda(lambda t, s=scale: t * s, output_shape=tuple(up.shape[1:]))(up)
        x = L.Add()([x, up])
        return L.ReLU()(x) if relu else x

    inp = _input((size, size, 3))
    x = cv(inp, 32, 3, 2, valid)
    x = cv(x, 32, 3, 1, valid)
    x = cv(x, 64, 3)
    x = L.MaxPooling2D(3, 2)(x)
    x = cv(x, 80, 1, 1, valid)
    x = cv(x, 192, 3, 1, valid)
    x = cv(x, 256, 3, 2, valid)
    for _ in range(5):  # Block35
        x = residual(x, [cv(x, 32, 1), cv(cv(x, 32, 1), 32, 3),
                         cv(cv(cv(x, 32, 1), 32, 3), 32, 3)], 0.17)  # fmt: skip
    x = L.Concatenate()([  # Mixed_6a
        cv(x, 384, 3, 2, valid), cv(cv(cv(x, 192, 1), 192, 3), 256, 3, 2, valid),
        L.MaxPooling2D(3, 2)(x),
    ])  # fmt: skip
    for _ in range(10):  # Block17
        x = residual(x, [cv(x, 128, 1), cv(cv(cv(x, 128, 1), 128, (1, 7)), 128, (7, 1))], 0.1)
    x = L.Concatenate()([  # Mixed_7a
        cv(cv(x, 256, 1), 384, 3, 2, valid), cv(cv(x, 256, 1), 256, 3, 2, valid),
        cv(cv(cv(x, 256, 1), 256, 3), 256, 3, 2, valid), L.MaxPooling2D(3, 2)(x),
    ])  # fmt: skip
    for i in range(6):  # Block8
        last = i == 5
        x = residual(x, [cv(x, 192, 1), cv(cv(cv(x, 192, 1), 192, (1, 3)), 192, (3, 1))],
                     1.0 if last else 0.2, relu=not last)  # fmt: skip
    x = L.GlobalAveragePooling2D()(x)
    x = L.Dense(dimension, use_bias=False)(x)
    x = L.BatchNormalization(momentum=0.995, epsilon=1e-3, scale=False)(x)
    return k.Model(inp, x)


def _mnv2_ssd_features(inp: Any) -> tuple[Any, list[Any]]:
    """MobileNetV2 1.0 (SAME padding, slim) as TF1's SSD feature extractors use it: returns
    the final 1x1-to-1280 map and the two feature maps, the expansion output of layer 15
    (19x19x576 at 300 px) and that 1280-channel map."""
    x = _conv_bn(inp, 32, 3, 2, act="relu6")
    cin, layer, feats = 32, 2, []
    for t, c, n, s in _MNV2_TABLE:
        for i in range(n):
            si = s if i == 0 else 1
            if layer == 15:  # its expansion output is the first feature map
                y = _conv_bn(x, cin * t, 1, act="relu6")
                feats.append(y)
                x = _conv_bn(_dw_bn(y, 3, si, act="relu6"), c, 1, act=None)
            else:
                x = _inverted_residual(x, cin, c, t, 3, si)
            cin, layer = c, layer + 1
    x = _conv_bn(x, 1280, 1, act="relu6")
    feats.append(x)
    return x, feats


def ssdlite_mnv2(size: int = 300, classes: int = 91) -> Any:
    """SSDLite MobileNetV2 as TF1's Object Detection API builds ``ssdlite_mobilenet_v2_coco``
    (tensorflow/models research/object_detection: ``models/ssd_mobilenet_v2_feature_extractor.py``,
    ``models/feature_map_generators.py`` multi_resolution_feature_maps,
    ``predictors/heads/{box,class}_head.py`` with ``use_depthwise``), the graph NXP's eIQ zoo
    converts (NXP/eiq-model-zoo@58c2b002
    tasks/vision/object-detection/ssdlite-mobilenetv2/recipe.sh: the 2018_05_09 saved model
    pruned from ``FeatureExtractor/MobilenetV2/MobilenetV2/input`` to ``concat`` /
    ``concat_1``, i.e. no preprocessing, no anchor decoding, no sigmoid, no
    TFLite_Detection_PostProcess). MobileNetV2 1.0 with SAME padding (slim); feature maps:
    the expansion output of layer 15 (19x19x576), layer 19 (the 1x1 to 1280, 10x10), then
    four SSDLite layers of 512/256/256/128 (1x1 to half depth, 3x3/2 depthwise, 1x1; BN,
    ReLU6). Each map has its own box and class heads: a 3x3 depthwise conv (BN, ReLU6) then a
    1x1 conv with bias to anchors x 4 and anchors x 91; 3 anchors in the first map, 6 in the
    others (1917 boxes), reshaped to (1, 1917, 1, 4) and (1, 1917, 91) and concatenated.

    This builds 4.50 M params (Keras, trainable; 4.48 M in the int8 file, BN folded) and
    0.750 G MACs (``infercast analyze``: 1.50 G FLOPs); the eIQ README says 4.3 M params and
    "1.5 G FLOPS". 4.3 M is the MobileNetV2 paper's SSDLite figure (Table 6: 4.3 M, 0.8 B
    MAdds); the zoo model's 91-class heads hold 0.16 M more weights than 81 classes would."""
    k = _k()
    L = k.layers
    inp = _input((size, size, 3))
    x, feats = _mnv2_ssd_features(inp)
    for d in (512, 256, 256, 128):
        x = _conv_bn(x, d // 2, 1, act="relu6")
        x = _conv_bn(_dw_bn(x, 3, 2, act="relu6"), d, 1, act="relu6")
        feats.append(x)
    boxes, scores = [], []
    for i, f in enumerate(feats):
        a = 3 if i == 0 else 6
        boxes.append(L.Reshape((-1, 1, 4))(L.Conv2D(a * 4, 1)(_dw_bn(f, act="relu6"))))
        scores.append(L.Reshape((-1, classes))(L.Conv2D(a * classes, 1)(_dw_bn(f, act="relu6"))))
    return k.Model(inp, [L.Concatenate(axis=1)(boxes), L.Concatenate(axis=1)(scores)])


def centernet_mnv2_fpn(size: int = 512, classes: int = 90) -> Any:
    """CenterNet MobileNetV2-FPN as the TF2 Object Detection API builds
    ``centernet_mobilenetv2fpn_512x512_coco17_od`` (tensorflow/models research/object_detection:
    ``models/center_net_mobilenet_v2_fpn_feature_extractor.py``,
    ``models/keras_models/mobilenet_v2.py``, ``meta_architectures/center_net_meta_arch.py``
    make_prediction_net), exported the way NXP's eIQ zoo does (NXP/eiq-model-zoo@58c2b002
    tasks/vision/object-detection/centernet/recipe.sh + centernet.patch: 512x512 fixed
    resizer, ``use_separable_conv: true``, the post-processing removed, outputs the raw
    heads plus the extracted features and the preprocessed image).

    Keras MobileNetV2 1.0 (SAME padding, the OD API's layer override), its preprocessing
    x / 127.5 - 1 in the graph; FPN on block_2_add / block_5_add / block_9_add / out_relu
    (1280 ch, 16x16): a 1x1 conv to 64, then three times nearest 2x upsampling + a 1x1 conv
    of the skip (64 / 32 / 24) + add, a 3x3 separable conv (to 32 / 24 / 24), BN, ReLU ->
    128x128x24. Three heads (object centre: 90 classes, box scale: 2, box offset: 2): a 3x3
    separable conv to 256, ReLU, a 1x1 conv; separable because the zoo's CenterNet
    MobileNetV2-FPN configs set ``use_depthwise: true`` (the kpts sibling's pipeline.config,
    as public copies quote it; the od one ships only in the tarball -- the parameter count
    below agrees with separable heads, plain
    3x3 heads would give 2.51 M params and 4.7 G MACs). The nearest 2x upsampling is a
    ``Resizing`` layer: Keras 3's ``UpSampling2D`` converts to TILE / RESHAPE, the Keras 2.13
    of the eIQ recipe's (``requirements.txt``) to RESIZE_NEAREST_NEIGHBOR, as here.

    This builds 2.36 M params (Keras, trainable; 2.34 M in the int8 file, BN folded) and
    2.33 G MACs (``infercast analyze``: 4.67 G FLOPs); the eIQ README says 2.36 M params
    and "4.72 G FLOPS"."""
    k = _k()
    L = k.layers
    inp = _input((size, size, 3))
    pre = L.Rescaling(1.0 / 127.5, offset=-1.0)(inp)
    x = _conv_bn(pre, 32, 3, 2, act="relu6")
    cin, block, skips = 32, 0, []
    for t, c, n, s in _MNV2_TABLE:
        for i in range(n):
            x = _inverted_residual(x, cin, c, t, 3, s if i == 0 else 1)
            if block in (2, 5, 9):
                skips.append(x)
            cin, block = c, block + 1
    x = _conv_bn(x, 1280, 1, act="relu6")
    td = L.Conv2D(64, 1)(x)
    for skip, c, nxt in ((skips[2], 64, 32), (skips[1], 32, 24), (skips[0], 24, 24)):
        td = L.Resizing(2 * td.shape[1], 2 * td.shape[2], interpolation="nearest")(td)
        td = L.Add()([td, L.Conv2D(c, 1)(skip)])
        td = L.SeparableConv2D(nxt, 3, padding="same")(td)
        td = L.ReLU()(L.BatchNormalization()(td))
    heads = [L.Conv2D(n, 1)(L.ReLU()(L.SeparableConv2D(256, 3, padding="same")(td)))
             for n in (classes, 2, 2)]  # fmt: skip
    return k.Model(inp, [pre, td, *heads[::-1]])


def _swish(x: Any) -> Any:
    """``x * sigmoid(x)`` as converters write SiLU / swish: LOGISTIC + MUL."""
    L = _k().layers
    return L.Multiply()([x, L.Activation("sigmoid")(x)])


def _silu_conv(x: Any, filters: int, k: int, s: int = 1) -> Any:
    """ultralytics ``Conv`` (conv + BN + SiLU) as onnx2tf writes it: the ONNX pads of a
    stride-1 conv equal TF's SAME; a stride-2 3x3 conv gets an explicit PAD and a VALID conv
    (PyTorch pads 1 on both sides, SAME would pad 0/1); SiLU is ONNX Sigmoid * x, i.e.
    LOGISTIC + MUL."""
    L = _k().layers
    if s > 1:
        x = L.ZeroPadding2D(k // 2)(x)
    return _swish(_conv_bn(x, filters, k, s, act=None, pad="valid" if s > 1 else "same"))


def _split(x: Any, sizes: list[int]) -> list[Any]:
    """``tf.split`` along channels, as the converters write an ONNX Split (``chunk`` /
    ``split``): SPLIT for equal parts, SPLIT_V otherwise."""
    import tensorflow as tf

    L = _k().layers
    h, w = (int(d) for d in x.shape[1:3])
    shapes = [(h, w, c) for c in sizes]
    parts: int | list[int] = len(sizes) if len(set(sizes)) == 1 else sizes
    out: list[Any] = L.Lambda(lambda t: tf.split(t, parts, axis=-1), output_shape=shapes)(x)
    return out


def _c2f(x: Any, c2: int, n: int, shortcut: bool) -> Any:
    """ultralytics ``C2f`` (e = 0.5): 1x1 conv to 2c, split in two, ``n`` bottlenecks (two 3x3
    convs, residual add when ``shortcut``) chained on the second half, concat of all 2 + n
    parts, 1x1 conv to c2."""
    L = _k().layers
    c = c2 // 2
    ys = _split(_silu_conv(x, 2 * c, 1), [c, c])
    for _ in range(n):
        b = _silu_conv(_silu_conv(ys[-1], c, 3), c, 3)
        ys.append(L.Add()([ys[-1], b]) if shortcut else b)
    return _silu_conv(L.Concatenate()(ys), c2, 1)


def yolov8n(size: int = 640, classes: int = 80) -> Any:
    """YOLOv8n as ultralytics ``cfg/models/v8/yolov8.yaml`` defines it at scale n (depth 0.33,
    width 0.25, max channels 1024), exported as NXP's eIQ zoo says
    (NXP/eiq-model-zoo@58c2b002 ``tasks/vision/object-detection/yolov8/README.md``: DeGirum's
    ultralytics fork, ``yolo export format=tflite int8 separate_outputs=True``).

    That fork's exporter (DeGirum/ultralytics_yolov8 ``ultralytics/engine/exporter.py``,
    2024) converts the ONNX file with onnx2tf, ``quant_type="per-tensor"``, int8 input and
    output (``yolov8n_full_integer_quant.tflite``): per-tensor int8, ``int8pt`` here. With
    ``separate_outputs`` the ``Detect`` head (``nn/modules/head.py``) returns the six raw
    conv outputs, each permuted to NHWC and reshaped to (1, H*W, C): box distributions
    (4 x reg_max 16 = 64 ch) and class logits (80 ch) for P3/P4/P5 -- no DFL softmax, no
    sigmoid, no box decoding in the graph (the README's six outputs (1, 6400, 64) ...
    (1, 400, 80)). Layers: ``Conv`` = conv + BN + SiLU; ``C2f`` (split, bottlenecks,
    concat); ``SPPF`` (three chained 5x5 max pools); nearest 2x upsampling; ``Detect``
    branches Conv 3x3, Conv 3x3, conv 1x1 with 64 (box) and 80 (class) channels.

    This builds 3,151,888 parameters (BN folded) and 4.37 G MACs (8.82 GFLOPs) at 640
    (``infercast analyze``); ultralytics' fused YOLOv8n has 3,151,904 (the 16 more are the
    DFL's fixed 1x1 conv, not in this graph) and 8.7 GFLOPs (= 2 x MACs); the README says
    3.2 M parameters and "8.7 MOPS" (the same figure, G meant)."""
    k = _k()
    L = k.layers
    inp = _input((size, size, 3))
    x = _silu_conv(inp, 16, 3, 2)
    x = _silu_conv(x, 32, 3, 2)
    x = _c2f(x, 32, 1, True)
    x = _silu_conv(x, 64, 3, 2)
    p3 = x = _c2f(x, 64, 2, True)
    x = _silu_conv(x, 128, 3, 2)
    p4 = x = _c2f(x, 128, 2, True)
    x = _silu_conv(x, 256, 3, 2)
    x = _c2f(x, 256, 1, True)
    # SPPF
    y = [_silu_conv(x, 128, 1)]
    for _ in range(3):
        y.append(L.MaxPooling2D(5, 1, padding="same")(y[-1]))
    p5 = _silu_conv(L.Concatenate()(y), 256, 1)

    def up(t: Any) -> Any:
        h, w = int(t.shape[1]), int(t.shape[2])
        return L.Resizing(2 * h, 2 * w, interpolation="nearest")(t)

    h4 = _c2f(L.Concatenate()([up(p5), p4]), 128, 1, False)
    o3 = _c2f(L.Concatenate()([up(h4), p3]), 64, 1, False)
    o4 = _c2f(L.Concatenate()([_silu_conv(o3, 64, 3, 2), h4]), 128, 1, False)
    o5 = _c2f(L.Concatenate()([_silu_conv(o4, 128, 3, 2), p5]), 256, 1, False)
    boxes, probs = [], []
    for f in (o3, o4, o5):
        hw = int(f.shape[1]) * int(f.shape[2])
        b = L.Conv2D(64, 1)(_silu_conv(_silu_conv(f, 64, 3), 64, 3))
        c = L.Conv2D(classes, 1)(_silu_conv(_silu_conv(f, 80, 3), 80, 3))
        boxes.append(L.Reshape((hw, 64))(b))
        probs.append(L.Reshape((hw, classes))(c))
    return k.Model(inp, boxes + probs)


def _pad_conv_bn(x: Any, filters: int, k: int, s: int = 1, act: str | None = "leaky:0.1",
                 depthwise: bool = False) -> Any:  # fmt: skip
    """A padded PyTorch conv (+ BN, act) as openvino2tensorflow writes it: any conv with
    ONNX pads becomes ZeroPadding2D + a VALID conv (PAD + CONV_2D / DEPTHWISE_CONV_2D)."""
    L = _k().layers
    if k > 1:
        x = L.ZeroPadding2D(k // 2)(x)
    if depthwise:
        return _dw_bn(x, k, s, act=act, pad="valid")
    return _conv_bn(x, filters, k, s, act=act, pad="valid")


def _channel_shuffle(x: Any, groups: int = 2) -> Any:
    """ShuffleNet's channel shuffle as openvino2tensorflow writes OpenVINO's ShuffleChannels
    (which the Model Optimizer fuses from the ONNX Reshape-Transpose-Reshape): RESHAPE to
    (1, H*W, groups, C/groups), TRANSPOSE (0, 1, 3, 2), RESHAPE back to (1, H, W, C)."""
    L = _k().layers
    h, w, c = (int(d) for d in x.shape[1:])
    x = L.Reshape((h * w, groups, c // groups))(x)
    x = L.Permute((1, 3, 2))(x)
    return L.Reshape((h, w, c))(x)


def _shufflev2_block(x: Any, cout: int, s: int) -> Any:
    """ShuffleNetV2 unit (nanodet ``model/backbone/shufflenetv2.py``, LeakyReLU 0.1)."""
    L = _k().layers
    bf = cout // 2
    if s == 1:
        x1, x2 = _split(x, [bf, bf])
    else:
        x1 = _pad_conv_bn(x, 0, 3, s, act=None, depthwise=True)
        x1 = _pad_conv_bn(x1, bf, 1)
        x2 = x
    x2 = _pad_conv_bn(x2, bf, 1)
    x2 = _pad_conv_bn(x2, 0, 3, s, act=None, depthwise=True)
    x2 = _pad_conv_bn(x2, bf, 1)
    return _channel_shuffle(L.Concatenate()([x1, x2]))


def nanodet_m_05x_stride32(size: int = 320, classes: int = 80) -> Any:
    """NanoDet-m 0.5x as NXP's eIQ zoo ships it (NXP/eiq-model-zoo@58c2b002
    ``tasks/vision/object-detection/nanodet-m/``: README, ``recipe.sh``, ``nanodet.patch``):
    RangiLyu/nanodet@0f4d8f11 ``config/legacy_v0.x_configs/nanodet-m-0.5x.yml`` exported to
    ONNX (opset 10) with NXP's patch that returns only the **last (stride-32) level** of the
    head, so the two finer head levels are dead code and gone; then OpenVINO MO 2022.1 ->
    openvino2tensorflow 1.31.6 -> TF 2.9 converter, full int8 with int8 input and output
    (per-channel, the converter default).

    Backbone ShuffleNetV2 0.5x (``model/backbone/shufflenetv2.py``: 3x3/2 conv 24 ch,
    3x3/2 max pool, stages of 4/8/4 units with 48/96/192 ch, LeakyReLU 0.1, no conv5).
    Neck: legacy PAN (``model/fpn/pan.py``): 1x1 lateral convs to 96 ch (bias, no BN or
    activation), top-down 2x bilinear upsampling + add, bottom-up 0.5x bilinear
    downsampling + add, no convs in the paths. Head (``model/head/nanodet_head.py``,
    share_cls_reg): on the 10x10 map, two depthwise-separable modules (dw 3x3 + BN + leaky,
    pw 1x1 96 + BN + leaky), a 1x1 conv to 80 + 4 x (reg_max 7 + 1) = 112 ch, split into
    class scores (sigmoid) and box distributions: the README's outputs (10, 10, 80) and
    (10, 10, 32). openvino2tensorflow writes every padded conv and the padded max pool as
    ZeroPadding2D + VALID, the shuffle as a 4-D RESHAPE / TRANSPOSE / RESHAPE, LeakyReLU as
    LEAKY_RELU, the bilinear resizes as RESIZE_BILINEAR. The converter used here folds the
    stride-1 pads back into SAME convs (8 PADs remain: stem, max pool, the six stride-2
    depthwise convs); TF 2.9's may have kept all 23 (small maps, at most 40x40x48).

    This builds 204,136 parameters (BN folded) and 76.85 M MACs (160.7 M FLOPs with the
    element-wise ops) at 320 (``infercast analyze``); the README states 204,179 parameters
    and 158.069 MOPS, i.e. the trimmed stride-32 model (the full three-level one has about
    72 k more parameters and 1.8x the MACs)."""
    k = _k()
    L = k.layers
    inp = _input((size, size, 3))
    x = _pad_conv_bn(inp, 24, 3, 2)
    x = L.ZeroPadding2D(1)(x)
    x = L.MaxPooling2D(3, 2, padding="valid")(x)
    feats = []
    for cout, reps in ((48, 4), (96, 8), (192, 4)):
        x = _shufflev2_block(x, cout, 2)
        for _ in range(reps - 1):
            x = _shufflev2_block(x, cout, 1)
        feats.append(x)
    lat = [L.Conv2D(96, 1)(f) for f in feats]

    def resize(t: Any, f: float) -> Any:
        h, w = int(t.shape[1]), int(t.shape[2])
        return L.Resizing(int(h * f), int(w * f), interpolation="bilinear")(t)

    lat[1] = L.Add()([lat[1], resize(lat[2], 2)])
    lat[0] = L.Add()([lat[0], resize(lat[1], 2)])
    lat[1] = L.Add()([lat[1], resize(lat[0], 0.5)])
    y = L.Add()([lat[2], resize(lat[1], 0.5)])
    for _ in range(2):
        y = _pad_conv_bn(y, 0, 3, depthwise=True, act="leaky:0.1")
        y = _pad_conv_bn(y, 96, 1)
    out = L.Conv2D(classes + 32, 1)(y)
    cls, reg = _split(out, [classes, 32])
    return k.Model(inp, [L.Activation("sigmoid")(cls), reg])


def _upsample2(x: Any, align_corners: bool = False) -> Any:
    """Bilinear x2 upsampling: Keras ``UpSampling2D`` (RESIZE_BILINEAR, half-pixel centres,
    PyTorch's ``align_corners=False``) or, with ``align_corners``, TensorFlow 1's
    ``resize_bilinear(align_corners=True)`` (PyTorch's ``align_corners=True``)."""
    import tensorflow as tf

    L = _k().layers
    if not align_corners:
        return L.UpSampling2D(2, interpolation="bilinear")(x)
    h, w, c = (int(d) for d in x.shape[1:])
    return L.Lambda(
        lambda t: tf.compat.v1.image.resize_bilinear(t, (2 * h, 2 * w), align_corners=True),
        output_shape=(2 * h, 2 * w, c),
    )(x)


def movenet_lightning(size: int = 192) -> Any:
    """MoveNet.SinglePose Lightning (TF Hub ``google/lite-model/movenet/singlepose/lightning/
    tflite/int8/4``, the eIQ recipe's download), with its in-graph decode.

    Model card (MoveNet.SinglePose Model Card, Google): a MobileNetV2 feature extractor, depth
    multiplier 1.0 for Lightning, a Feature Pyramid Network decoder to stride 4, CenterNet
    heads, custom post-processing. Layer by layer after lee-man/movenet-pytorch (a PyTorch
    port that loads the weights of the TF Hub TFLite file, so its shapes are the file's):
    ``movenet/models/mobilenetv2.py`` (torchvision MobileNetV2 1.0 ``features``, the 1x1
    1280 conv included, BN folded), ``backbone_utils.py`` (FPN on features 3, 6, 10, 18:
    24 @ 48x48, 32 @ 24, 64 @ 12, 1280 @ 6; lateral 1x1 convs to 24 / 32 / 64 / 64),
    ``feature_pyramid_network.py`` (top-down: bilinear x2, ADD, then a separable conv
    -- depthwise 3x3 + 1x1 + ReLU -- to 32, 24, 24 channels), ``movenet.py`` (four heads on
    the 24 @ 48x48 map, each depthwise 3x3 + 1x1 to 96 + ReLU + 1x1: centre heatmap 1,
    keypoint regression 34, keypoint heatmap 17, keypoint offsets 34; sigmoid on both
    heatmaps).

    With the shipped file's input and tail (``_movenet_decode``): uint8 [1, 192, 192, 3]
    input, CAST to float32 and (x / 127.5 - 1) inside the graph (the port's ``forward``), and
    the decode after the heads ending in a float32 [1, 1, 17, 3] output; DIV and SQRT have no
    int8 kernel and stay float32 between DEQUANTIZE and QUANTIZE (``float_ops``, see
    ``convert``). The int8 file holds 147 ops (CONV_2D 50, DEPTHWISE_CONV_2D 24, ADD 18,
    RESHAPE 9, MUL 7, QUANTIZE 7, SUB 5, CAST 4, DEQUANTIZE 4, GATHER_ND 3, PACK 3,
    RESIZE_BILINEAR 3, ARG_MAX 2, FLOOR_DIV 2, LOGISTIC 2, CONCATENATION 1, DIV 1, SQRT 1,
    UNPACK 1); the shipped file holds 157 (tensorflow/tensorflow#53682, a GPU-delegate log
    on this very file, which names no count per type, only the types it cannot take: ARG_MAX,
    CAST, CONCATENATION, FLOOR_DIV, GATHER_ND, MUL, PACK, RESHAPE, SUB, UNPACK -- all in the
    rebuild). Not known: the 10 ops this rebuild lacks, and which of the tail's ops the
    shipped file keeps in float or int32 where the rebuild has int8.

    This builds 2.32 M params / 0.27 G MACs at 192x192 (BN folded; the decode adds 0.01 M
    constants and no MACs); the model card and the eIQ README give neither ("FLOPS N/A",
    "Number of parameters N/A"), but the README's int8 file size, 2.8 MB, is this rebuild's
    (2,806,400 B; the shipped file: 2.89 MB in that issue's log)."""
    import tensorflow as tf

    k = _k()
    L = k.layers
    inp = k.Input(shape=(size, size, 3), batch_size=1, name="input", dtype="uint8")
    x = L.Lambda(lambda t: tf.cast(t, tf.float32) * (1.0 / 127.5) - 1.0)(inp)
    x = _conv_bn(x, 32, 3, 2, act="relu6")
    cin, feats = 32, []
    # taps after blocks 3, 6, 10
    for t, c, n, s in _MNV2_TABLE:
        for i in range(n):
            x = _inverted_residual(x, cin, c, t, 3, s if i == 0 else 1)
            cin = c
            if (c, i) in ((24, 1), (32, 2), (64, 3)):
                feats.append(x)
    feats.append(_conv_bn(x, 1280, 1, act="relu6"))
    top = _conv_bn(feats[3], 64, 1, act=None, bn=False, bias=True)
    for f, lat, fused in ((feats[2], 64, 32), (feats[1], 32, 24), (feats[0], 24, 24)):
        y = L.Add()([_conv_bn(f, lat, 1, act=None, bn=False, bias=True), _upsample2(top)])
        y = L.DepthwiseConv2D(3, padding="same")(y)
        top = _conv_bn(y, fused, 1, act="relu", bn=False, bias=True)
    outs = []
    for classes, sigmoid in ((1, True), (34, False), (17, True), (34, False)):
        y = L.DepthwiseConv2D(3, padding="same")(top)
        y = _conv_bn(y, 96, 1, act="relu", bn=False, bias=True)
        y = _conv_bn(y, classes, 1, act="sigmoid" if sigmoid else None, bn=False, bias=True)
        outs.append(y)
    model = k.Model(inp, L.Lambda(_movenet_decode, output_shape=(1, 17, 3))(outs))
    model.float_ops = ("DIV", "SQRT")  # float in the shipped file: see convert()
    return model


def _movenet_decode(heads: list[Any]) -> Any:
    """MoveNet's single-pose decode on the four 48x48 head maps, as the TFLite file runs it
    (lee-man/movenet-pytorch ``movenet/models/movenet.py`` ``forward``; the TensorFlow blog
    "Next-Generation Pose Detection with MoveNet"): centre heatmap times a fixed
    1 / (distance to the map centre + 1.8), ARG_MAX, FLOOR_DIV / MUL / SUB to (y, x);
    GATHER_ND of the 34 regressions there, added to the centre; keypoint heatmaps divided by
    (distance to each regressed keypoint + 1.8), ARG_MAX per keypoint, (y, x) again;
    GATHER_ND of the offsets and of the heatmap scores at those cells; (cell + offset) / 48
    and the score packed into [1, 1, 17, 3] float32."""
    import numpy as np
    import tensorflow as tf

    centre, regress, heat, offset = heads
    n = int(centre.shape[1])
    yy, xx = np.mgrid[0:n, 0:n].astype(np.float32)
    c = n / 2.0
    w_centre = (1.0 / (np.sqrt((yy - c) ** 2 + (xx - c) ** 2) + 1.8))[None, :, :, None]
    scores = tf.reshape(centre * tf.constant(w_centre), [1, n * n])
    idx = tf.reshape(tf.argmax(scores, axis=1, output_type=tf.int32), [])
    cy = tf.math.floordiv(idx, n)
    cx = idx - cy * n
    reg = tf.reshape(tf.gather_nd(tf.reshape(regress, [n, n, 34]), tf.stack([cy, cx])), [17, 2])
    ry, rx = tf.unstack(reg, axis=1)
    ky = ry + tf.cast(cy, tf.float32)
    kx = rx + tf.cast(cx, tf.float32)
    dy = tf.constant(yy[None, :, :, None]) - tf.reshape(ky, [1, 1, 1, 17])
    dx = tf.constant(xx[None, :, :, None]) - tf.reshape(kx, [1, 1, 1, 17])
    dist = tf.sqrt(dy * dy + dx * dx) + 1.8
    kidx = tf.argmax(tf.reshape(heat / dist, [n * n, 17]), axis=0, output_type=tf.int32)
    py = tf.math.floordiv(kidx, n)
    px = kidx - py * n
    cells = tf.stack([py, px, tf.range(17, dtype=tf.int32)], axis=1)
    off = tf.gather_nd(tf.reshape(offset, [n, n, 17, 2]), cells)
    conf = tf.gather_nd(tf.reshape(heat, [n, n, 17]), cells)
    yx = (off + tf.cast(tf.stack([py, px], axis=1), tf.float32)) * (1.0 / n)
    return tf.reshape(tf.concat([yx, tf.reshape(conf, [17, 1])], axis=1), [1, 1, 17, 3])


def midas_v21_small(size: int = 256) -> Any:
    """MiDaS v2.1 small (``MidasNet_small``) at 256x256, as the TF Hub TFLite file
    (``intel/lite-model/midas/v2_1_small/1/lite/1``) that NXP's eIQ recipe re-quantises
    (tflite2tensorflow: TFLite -> TF -> int8 TFLite, float32 input and output). The Intel
    file was converted from PyTorch straight to TensorFlow layers (isl-org/MiDaS issue #69:
    a private converter, not ONNX), so it is NHWC without TRANSPOSEs.

    Layer by layer after isl-org/MiDaS ``midas/midas_net_custom.py`` (features 64, expand,
    non-negative output, ``align_corners=True``) and ``midas/blocks.py``:

    * encoder ``_make_efficientnet_backbone(tf_efficientnet_lite3)``: EfficientNet-Lite3
      (width 1.2, depth 1.4, stem 32 and first / last stage repeats fixed, ReLU6, no SE)
      through its last stage, no 1280 head: taps 32 @ /4, 48 @ /8, 136 @ /16, 384 @ /32;
    * ``_make_scratch([32, 48, 136, 384], 64, expand)``: 3x3 convs without bias to 64, 128,
      256, 512;
    * four ``FeatureFusionBlock_custom`` (``ResidualConvUnit_custom``: ReLU, 3x3, ReLU, 3x3,
      ADD); the deepest has one input, so its first residual unit is never run and the
      traced file lacks it; bilinear x2 (align_corners), 1x1 out conv halving the channels
      (512 -> 256 -> 128 -> 64, the last 64 -> 64);
    * output head: 3x3 64 -> 32, bilinear x2 (align_corners=False), 3x3 32 -> 32, ReLU,
      1x1 32 -> 1, ReLU; squeezed to [1, 256, 256].

    This builds 16.56 M params / 4.60 G MACs (9.19 G ops as 2 x MACs, 9.23 G with the
    resizes and adds); the eIQ README says 9.214 GOPS and 17 MB int8 (this int8 file:
    17.6 MB). MiDaS's published "21 M" counts the PyTorch module, whose unused first
    residual unit of the deepest fusion block (2 x 3x3 512 -> 512 = 4.72 M; 16.56 + 4.72 =
    21.3 M) the traced TFLite file does not hold. Not checked against the file: whether
    Intel's converter wrote the stride-2 convs with an explicit PAD or as SAME, and whether
    its fusion-block resizes kept ``align_corners`` (Vela runs those on the CPU, see the
    ethos-u65 placement)."""
    k = _k()
    L = k.layers
    inp = _input((size, size, 3))
    x = _conv_bn(inp, 32, 3, 2, act="relu6")
    cin, feats = 32, []
    # EfficientNet-B0 stages (expansion, kernel, stride, channels, repeats) scaled to Lite3
    for t, kk, s, c, n in ((1, 3, 1, 24, 1), (6, 3, 2, 32, 3), (6, 5, 2, 48, 3), (6, 3, 2, 96, 5),
                           (6, 5, 1, 136, 5), (6, 5, 2, 232, 6), (6, 3, 1, 384, 1)):  # fmt: skip
        for i in range(n):
            x = _inverted_residual(x, cin, c, t, kk, s if i == 0 else 1)
            cin = c
        if c in (32, 48, 136, 384):
            feats.append(x)
    rn = [
        _conv_bn(f, ch, 3, act=None, bn=False)
        for f, ch in zip(feats, (64, 128, 256, 512), strict=True)
    ]

    def rcu(y: Any, ch: int) -> Any:
        z = L.ReLU()(y)
        z = _conv_bn(z, ch, 3, act="relu", bn=False, bias=True)
        z = _conv_bn(z, ch, 3, act=None, bn=False, bias=True)
        return L.Add()([z, y])

    path = None
    for f, ch in zip(reversed(rn), (512, 256, 128, 64), strict=True):
        y = f if path is None else L.Add()([path, rcu(f, ch)])
        y = _upsample2(rcu(y, ch), align_corners=True)
        path = _conv_bn(y, max(ch // 2, 64), 1, act=None, bn=False, bias=True)
    y = _conv_bn(path, 32, 3, act=None, bn=False, bias=True)
    y = _upsample2(y)
    y = _conv_bn(y, 32, 3, act="relu", bn=False, bias=True)
    y = _conv_bn(y, 1, 1, act="relu", bn=False, bias=True)
    y = L.Reshape((size, size))(y)
    return k.Model(inp, y)


def tiny_resnet8(size: int = 32, filters: int = 16, classes: int = 10) -> Any:
    """MLPerf Tiny image-classification ResNet-8 (CIFAR-10), the model NXP's eIQ zoo
    (``tasks/vision/classification/tiny-resnet``) downloads as
    ``pretrainedResnet_quant.tflite`` from mlcommons/tiny ``benchmark/training/
    image_classification/trained_models``; layers after that repo's ``keras_model.py``
    ``resnet_v1_eembc`` with the 16 filters of the file (its later default, 26, makes the
    200 k model): 3x3 conv (bias) + BN + ReLU at 32x32, then three stacks of two 3x3 convs
    (16, 32, 64 ch; the second and third start with stride 2 and take the identity through
    a 1x1 stride-2 conv, no BN), ADD and ReLU, average pool 8x8, FC 10, softmax.
    ``model_converter.py`` converts with the TF2 converter (Optimize.DEFAULT,
    TFLITE_BUILTINS_INT8, int8 input and output): per-channel int8.
    This builds 78,666 params (Keras' count, batch-norm statistics included) and 12.50 M
    MACs (25.0 M FLOPs); the eIQ README says 78,666 params and 25 MOPS. Checked against the
    file itself (mlcommons/tiny blob 0e2f5df, unchanged from 2021 to the eIQ recipe's
    download; int8 input and output, per-channel convs): op for op the same 9 CONV_2D, 3 ADD
    with fused ReLU, AVERAGE_POOL_2D, FULLY_CONNECTED and SOFTMAX, and shapes; the file also
    has a RESHAPE before the FC and per-tensor FC weights, which today's converter folds /
    quantises per channel (15 ops here against 16)."""
    k = _k()
    L = k.layers
    inp = _input((size, size, 3))
    x = _conv_bn(inp, filters, 3, bias=True)
    for i, c in enumerate((filters, 2 * filters, 4 * filters)):
        s = 1 if i == 0 else 2
        y = _conv_bn(x, c, 3, s, bias=True)
        y = _conv_bn(y, c, 3, act=None, bias=True)
        if s != 1:
            x = L.Conv2D(c, 1, strides=s, padding="same")(x)
        x = L.Activation("relu")(L.Add()([x, y]))
    x = L.AveragePooling2D(int(x.shape[1]))(x)
    x = L.Dense(classes, activation="softmax")(L.Flatten()(x))
    return k.Model(inp, x)


def deepface_emotion(size: int = 48, classes: int = 7) -> Any:
    """deepface's facial-expression CNN as serengil/deepface builds it
    (``deepface/extendedmodels/Emotion.py`` ``loadModel``, unchanged but for formatting from
    2020 through deepface 0.0.75, which NXP's eIQ zoo
    ``tasks/vision/classification/deepface-emotion/requirements.txt`` pins): 48x48
    grayscale; 5x5 conv 64 (valid, ReLU), max pool 5/2; two 3x3 convs 64, average pool 3/2;
    two 3x3 convs 128, average pool 3/2 (all valid, with bias); flatten (1x1x128), FC 1024,
    FC 1024 (ReLU; the dropouts are no-ops at inference), FC 7, softmax.
    This builds 1,485,831 params and 28.84 M MACs (57.7 M FLOPs; 58.35 M with the pools and
    element-wise work); the eIQ README says 58.5 MOPS, and 23,497,424 params, which
    is FaceNet512's count copied from that README (its accuracy table still says
    "FaceNet512" too): this network cannot hold 23 M params (its largest layer, the second
    FC, has 1.05 M)."""
    k = _k()
    L = k.layers
    inp = _input((size, size, 1))
    x = _conv_bn(inp, 64, 5, act="relu", bn=False, bias=True, pad="valid")
    x = L.MaxPooling2D(5, 2)(x)
    for c in (64, 128):
        x = _conv_bn(x, c, 3, act="relu", bn=False, bias=True, pad="valid")
        x = _conv_bn(x, c, 3, act="relu", bn=False, bias=True, pad="valid")
        x = L.AveragePooling2D(3, 2)(x)
    x = L.Flatten()(x)
    x = L.Dense(1024, activation="relu")(x)
    x = L.Dense(1024, activation="relu")(x)
    x = L.Dense(classes, activation="softmax")(x)
    return k.Model(inp, x)


def yolo_face_nxp(height: int = 128, width: int = 160) -> Any:
    """NXP's "YOLO Face" detector (NXP/eiq-model-zoo@58c2b002
    ``tasks/vision/object-detection/faceDet``), developed at NXP and shipped only as
    ``yolo_face_detect.tflite`` (no training code; keras-yolo3 is cited for the training
    method). Rebuilt from that file's graph (op by op: types, kernels, strides, padding,
    fused ReLU6, tensor shapes; its tensor names give the Keras layers): input 1x128x160x3
    (the README's "(160, 128, 3)" is width first); a Keras MobileNet v1 alpha 0.25 stem
    (``conv1`` 3x3/2 8 ch, ``conv_dw_1..4`` / ``conv_pw_1..4`` to 64 ch at 16x20, the
    stride-2 depthwise convs after ``conv_pad`` ZeroPadding2D((0, 1), (0, 1)) and VALID);
    then MobileNet depthwise-separable blocks (no bias, BN, ReLU6) at 64 ch, 2x2 max pools,
    nearest x2 resizes and ADDs between three scales (16x20, 8x10, 4x5), 1x1 convs (bias,
    BN, ReLU6) to 32 / 64 / 192 ch, and per scale a head: 3x3 depthwise (bias, BN, ReLU6)
    on 192 ch, 1x1 to 144 (bias, ReLU6, no BN), 1x1 to 18 (3 anchors x (5 + 1 class), bias,
    no activation). No decoding in the graph (``example.py`` decodes in numpy).
    This builds 189,654 params (Keras' count, batch norms included; 180,678 once folded,
    as the file holds) and 30.60 M MACs; the README says 189,654 params, and the shipped
    file analyses to the same 180,678 params and 30.60 M MACs (int8 per-channel, int8 input
    and output). Op for op the same but for the file's 2 PADs before the stride-2 depthwise
    convs, which today's converter folds into SAME (55 ops here against 57)."""
    k = _k()
    L = k.layers
    relu6 = "relu6"

    def sep(x: Any, c: int, s: int = 1) -> Any:  # keras MobileNet _depthwise_conv_block
        if s != 1:
            x = L.ZeroPadding2D(((0, 1), (0, 1)))(x)
        x = _dw_bn(x, 3, s, act=relu6, pad="same" if s == 1 else "valid")
        return _conv_bn(x, c, 1, act=relu6)

    def pw(x: Any, c: int) -> Any:  # Conv2D(bias) + BN + ReLU6
        return _conv_bn(x, c, 1, act=relu6, bias=True)

    def head(x: Any) -> Any:
        x = L.DepthwiseConv2D(3, padding="same", use_bias=True)(x)
        x = _act(L.BatchNormalization()(x), relu6)
        x = _conv_bn(x, 144, 1, act=relu6, bn=False, bias=True)
        return L.Conv2D(18, 1, padding="same")(x)

    def up2(x: Any) -> Any:  # RESIZE_NEAREST_NEIGHBOR, as the file has (not RESHAPE / TILE)
        return L.Resizing(2 * int(x.shape[1]), 2 * int(x.shape[2]), interpolation="nearest")(x)

    pool = L.MaxPooling2D(2, 2)
    inp = _input((height, width, 3))
    x = _conv_bn(inp, 8, 3, 2, act=relu6)
    x = sep(x, 16)
    x = sep(x, 32, 2)
    x = sep(x, 32)
    p16 = sep(x, 64, 2)  # 16x20
    p8 = pool(sep(p16, 64))  # 8x10
    p4 = pool(sep(p8, 64))  # 4x5
    a4 = pw(p4, 32)
    a8 = L.Add()([p8, up2(p4)])
    a8 = L.Add()([a8, sep(a8, 64)])
    a16 = L.Add()([p16, up2(pw(a8, 64))])
    a16 = L.Add()([a16, sep(a16, 64)])
    b16 = sep(a16, 64)
    out16 = head(pw(b16, 192))
    b8 = L.Add()([a8, pw(pool(b16), 64)])
    b8 = L.Add()([b8, sep(b8, 64)])
    c8 = sep(b8, 64)
    out8 = head(pw(c8, 192))
    b4 = L.Add()([a4, pw(pool(c8), 32)])
    b4 = L.Add()([b4, sep(b4, 32)])
    out4 = head(pw(b4, 192))
    return k.Model(inp, [out4, out8, out16])  # the file's output order


def ultraface_slim(height: int = 240, width: int = 320) -> Any:
    """Ultra-Light-Fast-Generic-Face-Detector-1MB "version-slim" at 320x240 with its in-graph
    post-processing, as NXP's eIQ zoo converts it (NXP/eiq-model-zoo@58c2b002
    ``tasks/vision/object-detection/ultraface-slim/``: README, ``recipe.sh``, ``slim.patch``):
    Linzaer/Ultra-Light-Fast-Generic-Face-Detector-1MB@dffdddd ``tf/model/slim_320.py``
    (``create_slim_net((240, 320), base_channel=16, num_classes=2)``, ``tf/convert_tensorflow.py``)
    with the layers of ``tf/backend/op.py``: every 3x3 conv is ZeroPadding2D(1) + a VALID conv
    (``conv_bn``, ``conv_dw``, ``separable_conv``), BN and ReLU after the backbone's convs, a
    bias and no BN in the heads. Backbone: conv_bn 3x3/2 16, then 12 conv_dw (depthwise 3x3 +
    BN + ReLU, 1x1 + BN + ReLU) of 32, 32/2, 32, 64/2, 64, 64, 64 (header 0, 30x40), 128/2,
    128, 128 (header 1, 15x20), 256/2, 256 (header 2, 8x10); extras: 1x1 conv 64 + ReLU,
    separable_conv 3x3/2 to 256 + ReLU (header 3, 4x5). Heads: separable_conv (depthwise 3x3
    with bias + ReLU, 1x1 with bias) to anchors x 4 and anchors x 2 on headers 0-2 (3, 2, 2
    anchors), plain 3x3 SAME convs on header 3 (3 anchors): 4420 boxes.

    Post-processing as ``slim.patch`` leaves ``tf/backend/utils.py``'s ``post_processing``:
    each head reshaped to (n, 4) / (n, 2) without the batch dimension, concatenated on axis 0,
    softmax on the class scores, ``decode_regression`` against the fixed priors (centre
    variance 0.1, size variance 0.2: MUL / ADD, EXP, SUB / ADD, CONCATENATION, clip to
    [0, 1]), concatenated to (4420, 6), then ``tf.image.non_max_suppression`` (100 boxes,
    IoU 0.3, no score threshold: the patch drops the confidence mask and the top-k) and a
    GATHER of the kept rows: a (<= 100, 6) float32 output.

    This builds 264,732 params (Keras' count, batch-norm statistics included) and 81.41 M
    MACs, 163.7 M FLOPs without the NMS (``infercast analyze`` of the int8 file, which costs
    the NMS's worst case at a further 146.5 M); the README says 264,732 params and
    168,707,432 FLOPS (3 % more: how it counts the element-wise work is not stated)."""
    import numpy as np
    import tensorflow as tf

    k = _k()
    L = k.layers
    inp = _input((height, width, 3))

    def conv_dw(x: Any, c: int, s: int) -> Any:
        x = L.ZeroPadding2D(1)(x)
        x = _dw_bn(x, 3, s, pad="valid")
        return _conv_bn(x, c, 1)

    def sep(x: Any, c: int, s: int = 1) -> Any:
        x = L.ZeroPadding2D(1)(x)
        x = L.DepthwiseConv2D(3, strides=s)(x)
        return L.Conv2D(c, 1)(L.ReLU()(x))

    x = _conv_bn(L.ZeroPadding2D(1)(inp), 16, 3, 2, pad="valid")
    heads = []
    for i, (c, s) in enumerate(((32, 1), (32, 2), (32, 1), (64, 2), (64, 1), (64, 1), (64, 1),
                                (128, 2), (128, 1), (128, 1), (256, 2), (256, 1))):  # fmt: skip
        x = conv_dw(x, c, s)
        if i in (6, 9, 11):  # basenet.7 / .10 / .12: headers 0-2
            heads.append(x)
    y = L.ReLU()(L.Conv2D(64, 1)(x))
    h3 = L.ReLU()(sep(y, 256, 2))
    anchors = (3, 2, 2, 3)
    regs = [sep(h, a * 4) for h, a in zip(heads, anchors, strict=False)]
    clss = [sep(h, a * 2) for h, a in zip(heads, anchors, strict=False)]
    regs.append(L.Conv2D(12, 3, padding="same")(h3))
    clss.append(L.Conv2D(6, 3, padding="same")(h3))

    # the fixed priors of tf/backend/utils.py decode_regression (image_size is (w, h))
    fmaps = [(int(t.shape[2]), int(t.shape[1])) for t in regs]
    min_boxes = [[10, 16, 24], [32, 48], [64, 96], [128, 192, 256]]
    priors = []
    for (fw, fh), mb in zip(fmaps, min_boxes, strict=True):
        gx, gy = np.meshgrid((np.arange(fw) + 0.5) / fw, (np.arange(fh) + 0.5) / fh)
        xy = np.repeat(np.stack([gx, gy], -1).reshape(-1, 2), len(mb), axis=0)
        wh = np.tile(np.stack([np.array(mb) / width, np.array(mb) / height], -1), (fw * fh, 1))
        priors.append(np.concatenate([xy, wh], -1))
    pri = np.concatenate(priors).astype(np.float32)  # 4420 x 4 at 320x240

    def post(ts: list[Any]) -> Any:
        rs, cs = ts[:4], ts[4:]
        reg = tf.concat([tf.reshape(r, (-1, 4)) for r in rs], axis=0)
        cls = tf.nn.softmax(tf.concat([tf.reshape(c, (-1, 2)) for c in cs], axis=0), axis=-1)
        p = tf.constant(pri)
        cxy = reg[:, :2] * 0.1 * p[:, 2:] + p[:, :2]
        cwh = tf.exp(reg[:, 2:] * 0.2) * p[:, 2:]
        loc = tf.clip_by_value(tf.concat([cxy - cwh / 2, cxy + cwh / 2], -1), 0.0, 1.0)
        res = tf.concat([cls, loc], axis=-1)
        keep = tf.image.non_max_suppression(loc, cls[:, 1], 100, iou_threshold=0.3)
        return tf.gather(res, keep, axis=0)

    out = L.Lambda(post, output_shape=(6,))(regs + clss)
    return k.Model(inp, out)


def whenet(size: int = 224) -> Any:
    """WHENet (Zhou & Gregson 2020, arXiv:2005.10353) as NXP's eIQ zoo converts it
    (NXP/eiq-model-zoo@58c2b002 ``tasks/vision/pose-estimation/whenet/``: README,
    ``recipe.sh``, ``utils.py get_whenet`` after Ascend-Research/HeadPoseEstimation-WHENet
    ``whenet.py``): qubvel/efficientnet ``efficientnet.keras.EfficientNetB0(include_top=False,
    input_shape=(224, 224, 3))`` (``efficientnet/model.py``), then a global average pool and
    three FC heads with bias: yaw 120, pitch 66, roll 66 (no softmax in the graph).

    qubvel's EfficientNet-B0 differs from ``keras.applications``': no rescaling or
    normalisation layers (the caller normalises), every conv SAME (no ZeroPadding2D before the
    stride-2 ones); swish is ``tf.nn.swish`` (x * sigmoid(x): LOGISTIC + MUL in TFLite);
    squeeze-excite is GlobalAveragePooling2D -> Reshape (1, 1, C) -> 1x1 conv with bias to
    max(1, int(block input ch x 0.25)) + swish -> 1x1 conv with bias + sigmoid -> MUL;
    ``include_top=False`` keeps the 1x1 conv to 1280 + BN + swish; dropout / drop-connect
    are inference no-ops.

    This builds 4,372,376 params (Keras' count, BN statistics included; 4,049,564 in the
    backbone + 322,812 in the heads) and 0.385 G MACs, 0.805 G FLOPs with the element-wise
    work (``infercast analyze``); the README says 4.4 M params and 781 M FLOPS (3 % fewer:
    how it counts the swish / squeeze-excite work is not stated)."""
    k = _k()
    L = k.layers

    inp = _input((size, size, 3))
    x = _swish(_conv_bn(inp, 32, 3, 2, act=None))
    cin = 32
    for t, kk, s, c, n in ((1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3),
                           (6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1)):  # fmt: skip
        for i in range(n):
            si = s if i == 0 else 1
            y = _swish(_conv_bn(x, cin * t, 1, act=None)) if t != 1 else x
            y = _swish(_dw_bn(y, kk, si, act=None))
            e = int(y.shape[-1])
            se = L.Reshape((1, 1, e))(L.GlobalAveragePooling2D()(y))
            se = _swish(L.Conv2D(max(1, int(cin * 0.25)), 1)(se))
            se = L.Conv2D(e, 1, activation="sigmoid")(se)
            y = _conv_bn(L.Multiply()([y, se]), c, 1, act=None)
            if si == 1 and cin == c:
                y = L.Add()([y, x])
            x, cin = y, c
    x = _swish(_conv_bn(x, 1280, 1, act=None))
    x = L.GlobalAveragePooling2D()(x)
    return k.Model(inp, [L.Dense(120)(x), L.Dense(66)(x), L.Dense(66)(x)])


def selfie_segmenter(height: int = 256, width: int = 256, pool: str = "avg") -> Any:
    """MediaPipe Selfie Segmenter (general 256x256 or landscape 144x256) as NXP's eIQ zoo
    converts it (NXP/eiq-model-zoo@58c2b002
    ``tasks/vision/semantic-segmentation/selfie-segmenter/``: README, ``recipe.sh``):
    MediaPipe's float16 TFLite file -> PINTO0309/tflite2tensorflow (saved model) -> TF 2.11
    converter, int8 per-channel with float32 input and output.

    Layer by layer after MediaPipe's float16 ``selfie_segmentation.tflite`` /
    ``selfie_segmentation_landscape.tflite`` (``mediapipe/modules/selfie_segmentation``, the
    same network and model card as the Tasks ``selfie_segmenter`` the recipe downloads: both
    files are 244 KB in float16, as the README says of its two), read op by op (weights
    dequantised from float16, BN folded, every conv with a bias): a MobileNetV3-small-like
    encoder -- 3x3/2 conv 16 + hard-swish (128x128 tap); bottlenecks (expansion, kernel,
    stride, out, SE, activation) (16, 3, 2, 16, SE, ReLU; 64x64 tap), (72, 3, 2, 24, -, ReLU),
    (88, 3, 1, 24, -, ReLU; 32x32 tap), (96, 5, 2, 32, SE, hs), (128, 5, 1, 32, SE, hs) x 2,
    (96, 5, 1, 32, SE, hs) x 2, each with its 1x1 expansion conv (the first too), SE =
    global average pool, 1x1 + ReLU to a quarter, 1x1 + sigmoid, MUL; an LR-ASPP head on the
    16x16x32 map (1x1 to 128 + ReLU times sigmoid(1x1 to 128 of the global pool)); three
    decoder stages (bilinear x2 with half-pixel centres, 1x1 conv to the skip's channels
    24 / 16 / 16, ADD with the skip, a gate: skip x sigmoid(1x1(ReLU(1x1(pool(sum))))) + the
    upsampled branch, then 1x1 + ReLU, depthwise 3x3 + ReLU, ADD); a 2x2/2 transposed conv to
    1 channel with bias (MediaPipe's custom Convolution2DTransposeBias, which
    tflite2tensorflow writes as ``conv2d_transpose`` SAME + ADD: TRANSPOSE_CONV here) and a
    sigmoid. tflite2tensorflow writes HARD_SWISH as x * relu6(x + 3) * 0.16666667 (the
    converter fuses it back into HARD_SWISH), the general file's global pools as
    AVERAGE_POOL_2D (``pool="avg"``), the landscape file's as MEAN (``pool="mean"``).

    The int8 file holds the float16 file's ops one for one (CONV_2D 43, ADD 14, HARD_SWISH
    11, DEPTHWISE_CONV_2D 11, LOGISTIC 11, AVERAGE_POOL_2D or MEAN 10, MUL 10,
    RESIZE_BILINEAR 3, TRANSPOSE_CONV 1 for the custom op) plus the QUANTIZE / DEQUANTIZE
    of the float32 edges. This builds 106,401 params (the float16 files hold 106,401
    weights and biases) and 59.2 M MACs, 129.2 M FLOPs with the element-wise work at
    256x256 (33.3 M / 72.7 M at 144x256; ``infercast analyze``); the README says 127.7 M
    OPS and "63.84 M MACs" at 256x256, 71.6 M OPS and "35.78 M MACs" at 144x256: its MACs
    are its OPS halved, and its OPS count the element-wise work too (ours 1.2 % / 1.5 %
    more)."""
    import tensorflow as tf

    k = _k()
    L = k.layers

    def hswish(x: Any) -> Any:
        return L.Lambda(lambda t: t * tf.nn.relu6(t + 3.0) * 0.16666667)(x)

    def cv(x: Any, c: int, kk: int = 1, s: int = 1, act: str | None = "relu") -> Any:
        x = L.Conv2D(c, kk, strides=s, padding="same")(x)
        return hswish(x) if act == "hs" else _act(x, act)

    def dw(x: Any, kk: int, s: int = 1, act: str | None = "relu") -> Any:
        x = L.DepthwiseConv2D(kk, strides=s, padding="same")(x)
        return hswish(x) if act == "hs" else _act(x, act)

    def gpool(x: Any) -> Any:
        if pool == "mean":
            return L.GlobalAveragePooling2D(keepdims=True)(x)
        return L.AveragePooling2D((int(x.shape[1]), int(x.shape[2])))(x)

    def gate(x: Any, c: int) -> Any:
        return cv(cv(gpool(x), c), c, act="sigmoid")

    def up(x: Any) -> Any:
        return L.UpSampling2D(2, interpolation="bilinear")(x)

    inp = _input((height, width, 3))
    x = cv(inp, 16, 3, 2, act="hs")
    skips = [x]
    cin = 16
    for e, kk, s, c, se, act in ((16, 3, 2, 16, 8, "relu"), (72, 3, 2, 24, 0, "relu"),
                                 (88, 3, 1, 24, 0, "relu"), (96, 5, 2, 32, 24, "hs"),
                                 (128, 5, 1, 32, 32, "hs"), (128, 5, 1, 32, 32, "hs"),
                                 (96, 5, 1, 32, 24, "hs"), (96, 5, 1, 32, 24, "hs")):  # fmt: skip
        y = dw(cv(x, e, act=act), kk, s, act=act)
        if se:
            y = L.Multiply()([y, cv(cv(gpool(y), se), e, act="sigmoid")])
        y = cv(y, c, act=None)
        if s == 1 and cin == c:
            y = L.Add()([y, x])
        if e in (16, 88):
            skips.append(y)
        x, cin = y, c
    x = L.Multiply()([cv(x, 128), cv(gpool(x), 128, act="sigmoid")])
    for skip in reversed(skips):
        c = int(skip.shape[-1])
        x = cv(up(x), c, act=None)
        g = gate(L.Add()([skip, x]), c)
        x = L.Add()([L.Multiply()([skip, g]), x])
        x = cv(x, c)
        x = L.Add()([x, dw(x, 3)])
    x = L.Conv2DTranspose(1, 2, strides=2, padding="same")(x)
    return k.Model(inp, L.Activation("sigmoid")(x))


_KA = "keras.applications (weights=None)"
_r("mobilenet_v1_a025_128", keras_app, _KA, cls="MobileNet", size=128, alpha=0.25)
_r("mobilenet_v1_a025_96_vww", keras_app, "MLPerf Tiny VWW: MobileNet v1 0.25 at 96, 2 classes",
   cls="MobileNet", size=96, alpha=0.25, classes=2)  # fmt: skip
_r("mobilenet_v1_a075_224", keras_app, _KA, cls="MobileNet", size=224, alpha=0.75)
_r("mobilenet_v1_224", keras_app, _KA, cls="MobileNet", size=224, alpha=1.0)
_r("mobilenet_v2_224", keras_app, _KA, cls="MobileNetV2", size=224, alpha=1.0)
_r("mobilenet_v3_large_224", keras_app, _KA, cls="MobileNetV3Large", size=224,
   include_preprocessing=False)  # fmt: skip
_r("efficientnet_b0_224", keras_app, _KA, cls="EfficientNetB0", size=224)
_r("resnet50_224", keras_app, _KA, cls="ResNet50", size=224)
_r("resnet152_v2_299", keras_app, _KA, cls="ResNet152V2", size=299)
_r("inception_v3_299", keras_app, _KA, cls="InceptionV3", size=299)
_r("inception_v3_224", keras_app, _KA, cls="InceptionV3", size=224)
_r("inception_resnet_v2_299", keras_app, _KA, cls="InceptionResNetV2", size=299)
_r("vgg16_224", keras_app, _KA, cls="VGG16", size=224)
_r("mobilenet_v3_small_224", keras_app, _KA, cls="MobileNetV3Small", size=224,
   include_preprocessing=False)  # fmt: skip
_r("efficientnet_v2_b0_224", keras_app, _KA, cls="EfficientNetV2B0", size=224,
   include_preprocessing=False)  # fmt: skip
_r("resnet50_v2_224", keras_app, _KA, cls="ResNet50V2", size=224)
_r("densenet121_224", keras_app, _KA, cls="DenseNet121", size=224)
_r("resnet50_299", keras_app, _KA, cls="ResNet50", size=299)
_r("resnet50_v2_299", keras_app, _KA, cls="ResNet50V2", size=299)
_r("vgg19_224", keras_app, _KA, cls="VGG19", size=224)
_r("nasnet_mobile_224", keras_app, _KA, cls="NASNetMobile", size=224)
_r("xception_299", keras_app, _KA, cls="Xception", size=299)
_r("mobilenet_v2_a035_224", keras_app, _KA, cls="MobileNetV2", size=224, alpha=0.35)
_r("ds_cnn_kws", ds_cnn)
_r("ad_autoencoder", ad_autoencoder)
_r("wav2letter", wav2letter)
_r("deeplabv3_mnv2_dm05_513", deeplabv3_mnv2)
_r("deeplabv3_mnv2_dm05_513_tf1", deeplabv3_mnv2, atrous_s2b=True)
_r("efficientnet_lite0_224", efficientnet_lite0)
_r("yolov4_tiny_416", yolov4_tiny)
_r("yolov3_tiny_416_1class", yolov3_tiny,
   "ruitaodong/imx-benchmarks yolov3-tiny/qrcode-yolov3-tiny.cfg", classes=1)  # fmt: skip
_r("resnet18_224", resnet18)
_r("squeezenet_v1_1_224", squeezenet_v1_1)
_r("mobilenet_ssd_300", mobilenet_ssd)
_r("ssd_mobilenet_v1_300_pp", ssd_mobilenet_v1_postprocess)
_r("ssd_mobilenet_v2_300_pp", ssd_mobilenet_v2_postprocess)
_r("ssd_mobilenet_v2_face_320_pp", ssd_mobilenet_v2_postprocess, size=320, classes=1)
_r("inception_v1_224", inception_v1)
_r("unet_mnv2_128", unet_mnv2,
   "tensorflow/docs image-segmentation tutorial (Coral's U-Net MobileNet v2)")  # fmt: skip
_EDGETPU_NET = "tensorflow/tpu models/official/efficientnet/edgetpu"
_r("efficientnet_edgetpu_s_224", efficientnet_edgetpu, _EDGETPU_NET)
_r("efficientnet_edgetpu_m_240", efficientnet_edgetpu, _EDGETPU_NET, size=240, depth=1.1)
_r("efficientnet_edgetpu_l_300", efficientnet_edgetpu, _EDGETPU_NET, size=300, width=1.2,
   depth=1.4)  # fmt: skip
_POSENET = "google-coral/project-posenet models/mobilenet/components (Coral's PoseNet files)"
_r("posenet_mnv1_075_353_481", posenet_mnv1_075, _POSENET, height=353, width=481)
_r("posenet_mnv1_075_481_641", posenet_mnv1_075, _POSENET, height=481, width=641)
_r("posenet_mnv1_075_721_1281", posenet_mnv1_075, _POSENET, height=721, width=1281)
_r("inception_v4_299", inception_v4)
_r("tiny_resnet8_32", tiny_resnet8, "mlcommons/tiny image_classification keras_model.py")
_r("deepface_emotion_48", deepface_emotion, "serengil/deepface extendedmodels/Emotion.py (0.0.75)")
_r("yolo_face_nxp_128x160", yolo_face_nxp, "NXP/eiq-model-zoo@58c2b002 faceDet .tflite graph")
_r("ultraface_slim_320", ultraface_slim,
   "NXP/eiq-model-zoo@58c2b002 ultraface-slim recipe.sh + slim.patch, Linzaer@dffdddd")  # fmt: skip
_r("whenet_224", whenet, "NXP/eiq-model-zoo@58c2b002 whenet utils.py get_whenet")
_r("selfie_segmenter_256", selfie_segmenter,
   "MediaPipe selfie_segmentation.tflite (float16), as NXP/eiq-model-zoo@58c2b002"
   " converts it")  # fmt: skip
_r("selfie_segmenter_landscape_144x256", selfie_segmenter,
   "MediaPipe selfie_segmentation_landscape.tflite (float16), as NXP/eiq-model-zoo@58c2b002"
   " converts it", height=144, width=256, pool="mean")  # fmt: skip
_r("mnasnet_a1_075_224", mnasnet_a1)
_r("facenet512_160", facenet512)
_r("ssdlite_mnv2_300", ssdlite_mnv2)
_r("centernet_mnv2_fpn_512", centernet_mnv2_fpn)
_r("movenet_lightning_192", movenet_lightning)
_r("midas_v21_small_256", midas_v21_small)
_r("yolov8n_640", yolov8n, "NXP/eiq-model-zoo@58c2b002 yolov8 README (DeGirum fork)")
_r("nanodet_m_05x_320_s32", nanodet_m_05x_stride32,
   "NXP/eiq-model-zoo@58c2b002 nanodet-m recipe.sh + nanodet.patch (stride 32 only)")  # fmt: skip
VELA_SET = (
    "mobilenet_v1_224",
    "mobilenet_v1_a025_128",
    "mobilenet_v2_224",
    "mobilenet_v2_a035_224",
    "mobilenet_v3_large_224",
    "mobilenet_v3_small_224",
    "efficientnet_b0_224",
    "efficientnet_v2_b0_224",
    "resnet50_224",
    "resnet50_v2_224",
    "densenet121_224",
    "inception_v3_299",
    "nasnet_mobile_224",
    "xception_299",
)
"""int8 keras.applications architectures compared with Arm Vela's performance estimate."""
for _s in (4, 16, 64, 128, 256):
    _r(f"conv3x3_128ch_{_s}", conv3x3, size=_s)


# --------------------------------------------------------------------------- #
# Conversion
# --------------------------------------------------------------------------- #


def _representative(model: Any, n: int = 3) -> Callable[[], Iterator[list[Any]]]:
    import numpy as np

    shapes = [tuple(int(d) for d in t.shape) for t in model.inputs]
    dtypes = [str(getattr(t.dtype, "name", t.dtype)) for t in model.inputs]

    def sample(rng: Any, s: tuple[int, ...], dt: str) -> Any:
        if dt == "uint8":  # an image input the model normalises itself (movenet_lightning)
            return rng.integers(0, 256, size=s).astype(np.uint8)
        return rng.uniform(-1.0, 1.0, size=s).astype(np.float32)

    def gen() -> Iterator[list[Any]]:
        rng = np.random.default_rng(SEED)
        for _ in range(n):
            yield [sample(rng, s, dt) for s, dt in zip(shapes, dtypes, strict=True)]

    return gen


def _frozen_graph(model: Any) -> tuple[bytes, list[str], list[str], dict[str, list[int]]]:
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2,
    )

    specs = [tf.TensorSpec(tuple(int(d) for d in t.shape), tf.float32) for t in model.inputs]
    fn = tf.function(lambda *xs: model(list(xs) if len(xs) > 1 else xs[0], training=False))
    frozen = convert_variables_to_constants_v2(fn.get_concrete_function(*specs))
    ins = [t.name.split(":")[0] for t in frozen.inputs]
    outs = [t.name.split(":")[0] for t in frozen.outputs]
    shapes = {n: [int(d) for d in s.shape] for n, s in zip(ins, specs, strict=True)}
    return frozen.graph.as_graph_def().SerializeToString(), ins, outs, shapes


def _convert_with_postprocess(model: Any, quant: str, post: dict[str, Any]) -> bytes:
    """``model`` with TFLite's SSD post-processing as the TF2 Object Detection API's TFLite
    exporter writes it (tensorflow/models research/object_detection
    ``export_tflite_graph_lib_tf2.py``: a ``tf.function`` marked
    ``experimental_implements`` with the op's name and attributes, which the converter turns
    into the ``TFLite_Detection_PostProcess`` custom op) on the model's (box encodings,
    class scores) and an anchors constant. The network is frozen first (its weights become
    constants, as in the exporter's saved model). ``int8pt`` / ``int8``: integer network with
    a uint8 image input and the op's float outputs, as Coral's and TF's detection models
    ship; ``fp32``: float throughout."""
    import numpy as np
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2,
    )

    if quant not in ("int8pt", "int8", "fp32"):
        raise ValueError(f"{quant!r}: a model with detection post-processing is built as "
                         "int8pt, int8 or fp32")  # fmt: skip
    ints = ("max_detections", "max_classes_per_detection", "detections_per_class", "num_classes")
    floats = ("nms_score_threshold", "nms_iou_threshold", "y_scale", "x_scale", "h_scale",
              "w_scale")  # fmt: skip
    regular = str(bool(post["use_regular_nms"])).lower()
    sig = " ".join(
        ['name: "TFLite_Detection_PostProcess"']
        + [f'attr {{ key: "{k}" value {{ i: {int(post[k])} }} }}' for k in ints]
        + [f'attr {{ key: "use_regular_nms" value {{ b: {regular} }} }}']
        + [f'attr {{ key: "{k}" value {{ f: {float(post[k]):f} }} }}' for k in floats]
    )
    anchors = tf.constant(np.asarray(post["anchors"], dtype=np.float32))

    @tf.function(experimental_implements=sig)  # type: ignore[untyped-decorator]
    def postprocess(box: Any, cls: Any, anc: Any) -> Any:
        return tuple(tf.constant(0.0, name=n) for n in ("boxes", "classes", "scores", "num"))

    spec = tf.TensorSpec(tuple(int(d) for d in model.inputs[0].shape), tf.float32)
    frozen = convert_variables_to_constants_v2(
        tf.function(lambda x: model(x, training=False)).get_concrete_function(spec)
    )

    class Detector(tf.Module):  # type: ignore[misc]
        @tf.function(input_signature=[spec])  # type: ignore[untyped-decorator]
        def run(self, x: Any) -> Any:
            box, cls = frozen(x)
            return postprocess(box, cls, anchors)

    mod = Detector()
    with tempfile.TemporaryDirectory() as d:
        tf.saved_model.save(mod, d, signatures=mod.run.get_concrete_function())
        c = tf.lite.TFLiteConverter.from_saved_model(d)
        c.allow_custom_ops = True
        if quant != "fp32":
            c.optimizations = [tf.lite.Optimize.DEFAULT]
            c.representative_dataset = _representative(model)
            c.target_spec.supported_ops = [
                tf.lite.OpsSet.TFLITE_BUILTINS_INT8,
                tf.lite.OpsSet.TFLITE_BUILTINS,
            ]
            c.inference_input_type = tf.uint8
            if quant == "int8pt":
                c._experimental_disable_per_channel = True
        out: bytes = _dequantize_last(c.convert())
    return out


def _dequantize_last(data: bytes) -> bytes:
    """The flatbuffer with each DEQUANTIZE whose output only the custom post-processing op
    reads moved to just before that op (still a valid order: the op is last). The converter
    schedules a head's DEQUANTIZE as soon as its input exists, before the other head's last
    conv; the TF1 files Coral ships have the post-processing read uint8 and no DEQUANTIZE,
    and an accelerator that takes one segment (the Edge TPU compiler) would otherwise leave
    that conv to the CPU."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema

    m = schema.ModelT.InitFromPackedBuf(data, 0)
    deq = schema.BuiltinOperator.DEQUANTIZE
    for sg in m.subgraphs:
        ops = list(sg.operators)
        readers: dict[int, list[int]] = {}
        for i, op in enumerate(ops):
            for x in op.inputs if op.inputs is not None else ():
                readers.setdefault(int(x), []).append(i)
        post = [i for i, op in enumerate(ops) if m.operatorCodes[op.opcodeIndex].customCode]
        if len(post) != 1:
            continue
        late = [
            i for i, op in enumerate(ops)
            if max(m.operatorCodes[op.opcodeIndex].builtinCode,
                   m.operatorCodes[op.opcodeIndex].deprecatedBuiltinCode) == deq
            and all(readers.get(int(o), []) == post for o in op.outputs)
        ]  # fmt: skip
        rest = [op for i, op in enumerate(ops) if i not in late and i != post[0]]
        sg.operators = rest + [ops[i] for i in late] + [ops[post[0]]]
    b = flatbuffers.Builder(len(data) + 1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def convert(model: Any, quant: str) -> bytes:
    """TFLite flatbuffer of ``model`` in quantisation variant ``quant`` (see module doc)."""
    import tensorflow as tf

    post = getattr(model, "postprocess", None)
    if post:
        return _convert_with_postprocess(model, quant, post)
    if quant == "uint8":
        gd, ins, outs, shapes = _frozen_graph(model)
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "graph.pb")
            Path(p).write_bytes(gd)
            c = tf.compat.v1.lite.TFLiteConverter.from_frozen_graph(p, ins, outs, shapes)
            c.inference_type = tf.uint8
            c.quantized_input_stats = {n: (128.0, 127.0) for n in ins}
            c.default_ranges_stats = (0, 6)
            out: bytes = c.convert()
            return out
    c = tf.lite.TFLiteConverter.from_keras_model(model)
    if quant in ("int8", "int8pt", "int8fio", "int8u8f"):
        c.optimizations = [tf.lite.Optimize.DEFAULT]
        c.representative_dataset = _representative(model)
        c.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        if quant == "int8u8f":
            c.inference_input_type = tf.uint8
            c.inference_output_type = tf.float32
        elif quant != "int8fio":
            c.inference_input_type = tf.int8
            c.inference_output_type = tf.int8
        float_ops = getattr(model, "float_ops", ())
        if float_ops:
            # ops with no int8 kernel (the MLIR quantizer would write int8 DIV / SQRT that
            # the runtime cannot run) stay float32 between DEQUANTIZE and QUANTIZE, as in
            # the shipped file; the input keeps the model's own dtype, the output is float32
            from tensorflow.lite.python.convert import mlir_quantize

            c._experimental_calibrate_only = True
            calibrated = c.convert()
            q: bytes = mlir_quantize(
                calibrated,
                disable_per_channel=quant == "int8pt",
                denylisted_ops=list(float_ops),
            )
            return q
        if quant == "int8pt":
            c._experimental_disable_per_channel = True
    elif quant != "fp32":
        raise ValueError(f"unknown quantisation variant {quant!r}; choose from {QUANTS}")
    data: bytes = c.convert()
    return data


def file_name(recipe: str, quant: str) -> str:
    return f"{recipe}_{quant}.tflite"


def build(recipe: str, quants: list[str], dest: Path) -> dict[str, Any]:
    """Build ``recipe`` once and write each quantisation variant into ``dest``."""
    import keras

    r = RECIPES[recipe]
    keras.utils.set_random_seed(SEED)
    model = r.build(**r.kwargs)
    info: dict[str, Any] = {"params": int(model.count_params()), "files": {}}
    for q in quants:
        path = dest / file_name(recipe, q)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(convert(model, q))
        tmp.replace(path)
        info["files"][path.name] = path.stat().st_size
    keras.backend.clear_session()
    return info
