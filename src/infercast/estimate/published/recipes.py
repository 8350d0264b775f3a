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

import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

QUANTS = ("fp32", "int8", "int8fio", "int8pt", "uint8")
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
             dilation: int = 1, bn: bool = True, bias: bool = False) -> Any:  # fmt: skip
    L = _k().layers
    x = L.Conv2D(filters, k, strides=s, padding="same", dilation_rate=dilation, use_bias=bias)(x)
    if bn:
        x = L.BatchNormalization()(x)
    return _act(x, act)


def _dw_bn(x: Any, k: int = 3, s: int = 1, act: str | None = "relu", dilation: int = 1,
           atrous_s2b: bool = False) -> Any:  # fmt: skip
    L = _k().layers
    if dilation > 1 and atrous_s2b:
        return _act(_atrous_dw_s2b(x, k, dilation), act)
    x = L.DepthwiseConv2D(k, strides=s, padding="same", dilation_rate=dilation, use_bias=False)(x)
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
    # (expansion, channels, repeats, stride) -- MobileNetV2 Table 2
    for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)):  # fmt: skip
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
    # (expansion, channels, repeats, stride) -- MobileNetV2 Table 2; taps after blocks 3, 6, 10
    for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)):  # fmt: skip
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
_r("inception_v1_224", inception_v1)
_r("inception_v4_299", inception_v4)
_r("movenet_lightning_192", movenet_lightning)
_r("midas_v21_small_256", midas_v21_small)
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


def convert(model: Any, quant: str) -> bytes:
    """TFLite flatbuffer of ``model`` in quantisation variant ``quant`` (see module doc)."""
    import tensorflow as tf

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
    if quant in ("int8", "int8pt", "int8fio"):
        c.optimizations = [tf.lite.Optimize.DEFAULT]
        c.representative_dataset = _representative(model)
        c.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        if quant != "int8fio":
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
