#!/usr/bin/env python3
"""Count the instructions TFLite's built-in int8 kernels execute on AArch64, and fit the
table of :mod:`infercast.estimate.aarch64` (``src/infercast/estimate/data/
aarch64-builtin-int8.json``).

Usage::

    python bench/bench_aarch64_insns.py --setup          # once: the emulator and an arm64 Python
    python bench/bench_aarch64_insns.py [--write]         # count, fit, check (and write the table)

What it does:

1. ``--setup`` (Debian; needs root and the package registries): installs ``qemu-user``,
   ``debootstrap`` and ``gcc``; unpacks a Debian bookworm arm64 Python into ``--root``
   (``debootstrap --foreign``, then every downloaded ``.deb`` extracted: nothing arm64 has to
   run to install it); downloads the aarch64 wheels of ``numpy`` and ``ai-edge-litert`` into
   ``--site``; compiles a QEMU TCG plugin (C, below) that counts executed instructions and
   prints the running count when the guest calls ``close()`` on a marker descriptor.
2. The models: the int8 architectures of the i.MX CPU rows of the published data file, 15
   further int8 models of the same recipes (keras.applications, SSD, U-Net), and one-layer
   int8 models of the element-wise, pooling, resize and data-movement operators at 8 shapes
   (the published recipes' converter, ``recipes.convert``: per-channel int8, int8 input and
   output), and one-op models of TFLite's SSD post-processing (``TFLite_Detection_PostProcess``,
   float by itself: the op of the SSD MobileNet v1 rebuild at other anchor, class and kept-box
   counts, float and uint8 inputs, fast and regular NMS; fed as an SSD feeds it,
   :func:`detection_inputs`). Every operator is cut into
   a one-operator model (``infercast.bench.runtimes.litert_ops.cut_single_ops``).
3. Each one-operator model runs under ``qemu-aarch64 -cpu cortex-a76`` (ARMv8.2 with SDOT /
   UDOT: the ``armv8.2-dotprod`` table, as a Cortex-A55 runs it) and ``-cpu cortex-a53``
   (``armv8.0``) on LiteRT's built-in op resolver, one thread: the instructions of one
   ``invoke()`` after a warm-up one, minus those of a one-element RELU model's.
4. Per ISA and kind of kernel (:func:`infercast.estimate.aarch64.features`), a non-negative
   least-squares fit on relative error. Printed: the fit on the keras and one-layer models
   only, checked on the published rows' architectures (per operator and per model), and the
   fit on everything, which ``--write`` stores.

Counting is deterministic (an emulator, not a clock): a loaded machine gives the same
numbers. The whole run takes ~15 minutes on two cores once the models are built.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from infercast.estimate.aarch64 import DATA_FILE, DETECTION, OpShape, features, op_shape  # noqa: E402

ISAS = {"armv8.2-dotprod": "cortex-a76", "armv8.0": "cortex-a53"}
CPU_TARGETS = ("imx8mp-cpu", "imx93-cpu")
EXTRA_MODELS = [
    ("densenet121_224", "int8"), ("efficientnet_b0_224", "int8"),
    ("efficientnet_v2_b0_224", "int8"), ("inception_v3_299", "int8"),
    ("mobilenet_v1_224", "int8"), ("mobilenet_v2_a035_224", "int8"),
    ("mobilenet_v3_large_224", "int8"), ("mobilenet_v3_small_224", "int8"),
    ("nasnet_mobile_224", "int8"), ("resnet50_v2_224", "int8"),
    ("ssd_mobilenet_v1_300_pp", "int8pt"), ("ssd_mobilenet_v2_300_pp", "int8pt"),
    ("ssd_mobilenet_v2_face_320_pp", "int8pt"), ("unet_mnv2_128", "int8"),
    ("xception_299", "int8"),
]  # fmt: skip
SHAPES = [(8, 8, 64), (16, 16, 32), (32, 32, 16), (28, 28, 96), (56, 56, 24), (112, 112, 16),
          (20, 20, 128), (15, 20, 40)]  # fmt: skip
MIN_SAMPLES = 3
MARK = 1_000_000

PLUGIN_C = r"""
/* Executed-instruction counter for QEMU 7.x user mode (plugin API v1). A guest close(fd)
 * with fd <= -1000000 prints "MARK <id> <instructions so far>" to stderr. */
#include <stdint.h>
#include <stdio.h>
#include <stddef.h>
typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t;
struct qemu_plugin_tb;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*tb_cb)(qemu_plugin_id_t, struct qemu_plugin_tb *);
typedef void (*sys_cb)(qemu_plugin_id_t, unsigned int, int64_t, uint64_t, uint64_t, uint64_t,
                       uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t, tb_cb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *, enum qemu_plugin_op,
                                              void *, uint64_t);
void qemu_plugin_register_vcpu_syscall_cb(qemu_plugin_id_t, sys_cb);
__attribute__((visibility("default"))) int qemu_plugin_version = 1;
static uint64_t insns;
static void on_tb(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &insns,
                                             qemu_plugin_tb_n_insns(tb));
}
static void on_sys(qemu_plugin_id_t id, unsigned int vcpu, int64_t num, uint64_t a1,
                   uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5, uint64_t a6,
                   uint64_t a7, uint64_t a8) {
    if (num == 57 && (int64_t)a1 <= -1000000) { /* aarch64 close */
        fprintf(stderr, "MARK %lld %llu\n", (long long)(-(int64_t)a1 - 1000000),
                (unsigned long long)insns);
        fflush(stderr);
    }
}
__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id,
        const qemu_info_t *info, int argc, char **argv) {
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb);
    qemu_plugin_register_vcpu_syscall_cb(id, on_sys);
    return 0;
}
"""

GUEST_PY = r"""
import os, sys, json
import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType
def mark(i):
    try:
        os.close(-1000000 - i)
    except OSError:
        pass
rng = np.random.default_rng(0)
for k, f in enumerate(sys.argv[1:]):
    try:
        it = Interpreter(model_path=f, num_threads=1,
                         experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
        it.allocate_tensors()
        side = f[: -len(".tflite")] + ".inputs.npz"
        given = np.load(side) if os.path.exists(side) else None
        for j, d in enumerate(it.get_input_details()):
            if np.issubdtype(d['dtype'], np.integer):
                ii = np.iinfo(d['dtype'])
                x = rng.integers(ii.min, ii.max, size=d['shape'], dtype=d['dtype'])
            elif d['dtype'] == np.bool_:
                x = rng.integers(0, 2, size=d['shape']).astype(bool)
            else:
                x = rng.standard_normal(d['shape']).astype(d['dtype'])
            if given is not None:
                x = given[f"i{j}"].astype(d['dtype']).reshape(d['shape'])
            it.set_tensor(d['index'], x)
        it.invoke()
        mark(2 * k)
        it.invoke()
        mark(2 * k + 1)
        print(json.dumps({"k": k, "ok": True}), flush=True)
    except Exception as e:
        print(json.dumps({"k": k, "ok": False, "err": str(e)[:200]}), flush=True)
"""


def setup(root: Path, site: Path, plugin: Path) -> None:
    """Install the emulator, unpack an arm64 Python, fetch the aarch64 wheels, build the
    plugin (see the module docstring)."""
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "install", "-y", "-q", "qemu-user", "debootstrap", "gcc"],
                   check=True, env=env)  # fmt: skip
    if not (root / "usr/bin/python3.11").exists():
        root.mkdir(parents=True, exist_ok=True)
        subprocess.run(["debootstrap", "--foreign", "--arch=arm64", "--variant=minbase",
                        "--include=python3", "bookworm", str(root),
                        "http://deb.debian.org/debian"], check=True)  # fmt: skip
        for deb in sorted((root / "var/cache/apt/archives").glob("*.deb")):
            subprocess.run(["dpkg", "-x", str(deb), str(root)], check=True)
    site.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                        "--platform", "manylinux_2_17_aarch64", "--python-version", "3.11",
                        "--implementation", "cp", "ai-edge-litert==1.4.0", "numpy==1.26.4",
                        "-d", d], check=True)  # fmt: skip
        for whl in Path(d).glob("*.whl"):
            shutil.unpack_archive(str(whl), str(site), "zip")
    src = plugin.with_suffix(".c")
    plugin.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(PLUGIN_C)
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", str(plugin), str(src)], check=True)
    print(f"ready: {root}, {site}, {plugin}")


def count(files: list[str], cpu: str, a: argparse.Namespace) -> dict[str, float | None]:
    """Instructions of one invoke() of each model under ``qemu-aarch64 -cpu CPU``."""
    guest = Path(a.work) / "guest.py"
    guest.write_text(GUEST_PY)
    out: dict[str, float | None] = {}
    for s in range(0, len(files), 150):  # a crash loses one chunk, not the run
        chunk = files[s : s + 150]
        cmd = ["qemu-aarch64", "-cpu", cpu, "-plugin", a.plugin, "-L", a.root,
               f"{a.root}/usr/bin/python3.11", str(guest), *chunk]  # fmt: skip
        p = subprocess.run(cmd, capture_output=True, text=True, env={"PYTHONPATH": a.site},
                           timeout=3600, check=False)  # fmt: skip
        marks = {int(m[1]): int(m[2]) for m in re.finditer(r"MARK (\d+) (\d+)", p.stderr)}
        for line in p.stdout.splitlines():
            d = json.loads(line)
            k = int(d["k"])
            ok = d["ok"] and 2 * k in marks and 2 * k + 1 in marks
            out[chunk[k]] = float(marks[2 * k + 1] - marks[2 * k]) if ok else None
    return out


def micro_models(dest: Path) -> list[Path]:
    """One-layer int8 models of the operators the architectures use little (cached)."""
    dest.mkdir(parents=True, exist_ok=True)
    import tensorflow as tf

    from infercast.estimate.published.recipes import convert

    layers = tf.keras.layers

    def lam(f: Any) -> Any:
        return lambda x: layers.Lambda(f)(x)

    def squared_difference(t: Any) -> Any:
        return tf.math.squared_difference(t[0], t[1])

    def split_v(x: Any) -> Any:  # unequal parts: SPLIT_V
        c = x.shape[3]
        return tf.concat(tf.split(x, [c // 4, c - c // 4], axis=-1)[::-1], -1)

    def gram(x: Any) -> Any:  # C x C from the H x W pixels: an int8 BATCH_MATMUL
        r = tf.reshape(x, (1, -1, x.shape[3]))
        return tf.matmul(r, r, transpose_a=True)

    def shuffle(x: Any) -> Any:  # ShuffleNet's channel shuffle: reshape, transpose, reshape
        h, w, c = x.shape[1], x.shape[2], x.shape[3]
        y = tf.transpose(tf.reshape(x, (1, h * w, 2, c // 2)), [0, 1, 3, 2])
        return tf.reshape(y, (1, h, w, c))

    ops: dict[str, tuple[Any, int]] = {
        "leaky_relu": (lambda x: layers.LeakyReLU(0.1)(x), 1),
        "relu6": (lambda x: layers.ReLU(6.0)(x), 1),
        "hard_swish": (lam(lambda x: x * tf.nn.relu6(x + 3.0) * 0.16666667), 1),
        "sigmoid": (lambda x: layers.Activation("sigmoid")(x), 1),
        "tanh": (lambda x: layers.Activation("tanh")(x), 1),
        "add": (lambda x, y: layers.Add()([x, y]), 2),
        "sub": (lambda x, y: layers.Subtract()([x, y]), 2),
        "mul": (lambda x, y: layers.Multiply()([x, y]), 2),
        "maximum": (lambda x, y: layers.Maximum()([x, y]), 2),
        "mul_bc": (lam(lambda x: x * tf.reduce_mean(x, axis=[1, 2], keepdims=True)), 1),
        "add_bc": (lam(lambda x: x + tf.reduce_mean(x, axis=[1, 2], keepdims=True)), 1),
        "mean": (lam(lambda x: tf.reduce_mean(x, axis=[1, 2], keepdims=True)), 1),
        "concat": (lambda x, y: layers.Concatenate()([x, y]), 2),
        "pad": (lambda x: layers.ZeroPadding2D(1)(x), 1),
        "resize_bilinear": (lambda x: layers.UpSampling2D(2, interpolation="bilinear")(x), 1),
        "resize_nearest": (lambda x: layers.UpSampling2D(2, interpolation="nearest")(x), 1),
        "transpose": (lam(lambda x: tf.transpose(x, [0, 2, 1, 3])), 1),
        "shuffle": (lam(shuffle), 1),
        "split": (lam(lambda x: tf.concat([t * 2.0 for t in tf.split(x, 2, axis=-1)], 1)), 1),
        "strided_slice": (lam(lambda x: x[:, ::2, 1::2, :]), 1),
        "max_pool": (lambda x: layers.MaxPool2D(2)(x), 1),
        "max_pool3s2": (lambda x: layers.MaxPool2D(3, 2, padding="same")(x), 1),
        "avg_pool": (lambda x: layers.AveragePooling2D(2)(x), 1),
        "softmax": (lambda x: layers.Softmax()(x), 1),
        "dilated_dw": (lambda x: layers.DepthwiseConv2D(3, dilation_rate=2, padding="same")(x), 1),
        # operators the architectures above hold few or none of, for models they do not cover
        "prelu": (lambda x: layers.PReLU(shared_axes=[1, 2])(x), 1),
        "elu": (lambda x: layers.ELU()(x), 1),
        "gelu": (lambda x: layers.Activation("gelu")(x), 1),
        "exp": (lam(tf.exp), 1),
        "rsqrt": (lam(lambda x: tf.math.rsqrt(tf.nn.relu(x) + 1.0)), 1),
        "squared_difference": (lambda x, y: layers.Lambda(squared_difference)([x, y]), 2),
        "minimum_bc": (lam(lambda x: tf.minimum(x, tf.reduce_mean(x, [1, 2], keepdims=True))), 1),
        "sum": (lam(lambda x: tf.reduce_sum(x, axis=[1, 2], keepdims=True)), 1),
        "reduce_max": (lam(lambda x: tf.reduce_max(x, axis=[1, 2], keepdims=True)), 1),
        "space_to_depth": (lam(lambda x: tf.nn.space_to_depth(x, 2)), 1),
        "depth_to_space": (lam(lambda x: tf.nn.depth_to_space(x, 2)), 1),
        "split_v": (lam(split_v), 1),
        "gather": (lam(lambda x: tf.gather(x, list(range(x.shape[3] - 1, -1, -2)), axis=3)), 1),
        "log_softmax": (lam(lambda x: tf.nn.log_softmax(x, axis=-1)), 1),
        "l2_norm": (lam(lambda x: tf.math.l2_normalize(x, axis=-1)), 1),
        "gram": (lam(gram), 1),
        "dense": (lambda x: layers.Dense(x.shape[3] * 4)(layers.GlobalAveragePooling2D()(x)), 1),
        "conv_transpose": (lambda x: layers.Conv2DTranspose(x.shape[3], 3, 2, "same")(x), 1),
    }
    paths = []
    for name, (fn, n_in) in ops.items():
        for shape in SHAPES:
            p = dest / f"{name}_{'x'.join(map(str, shape))}.tflite"
            paths.append(p)
            if p.exists():
                continue
            ins = [tf.keras.Input(shape, batch_size=1) for _ in range(n_in)]
            try:
                p.write_bytes(convert(tf.keras.Model(ins, fn(*ins)), "int8"))
            except Exception as e:  # an op undefined at this shape (space_to_depth of 15 rows)
                print(f"  {p.name}: not built ({type(e).__name__})", file=sys.stderr)
                paths.pop()
    return paths


DETECTION_SHAPES = [
    (n, c, d) for n in (256, 768, 1917, 4000) for c in (1, 20, 90) for d in (10, 100)
]
DETECTION_REGULAR = [(n, c, 100) for n in (256, 1917) for c in (1, 20, 90)]


BOX_QUANT = (0.05, 128)
"""(scale, zero point) of the uint8 box codes of :func:`detection_variant` (codes within
about +-6, as an SSD's are)."""
SCORE_QUANT = (1 / 256, 0)
"""(scale, zero point) of its uint8 post-sigmoid class scores."""


def detection_inputs(model: Path) -> None:
    """Inputs of a one-op SSD post-processing model as an SSD feeds it, written beside it
    (``<model>.inputs.npz``, which the guest reads): box codes ~ N(0, 0.5) and post-sigmoid
    class scores ~ U(0, 1), quantised where the inputs are uint8, so every anchor passes the
    score threshold as on real images (standard-normal scores would drop half of a one-class
    model's anchors)."""
    import numpy as np

    import infercast

    g = infercast.load(model)
    rng = np.random.default_rng(0)
    arrays = {}
    for j, name in enumerate(g.inputs):
        t = g.tensors[name]
        shape = [int(v) for v in t.shape or ()]
        boxes = bool(shape) and shape[-1] == 4
        x = 0.5 * rng.standard_normal(shape) if boxes else rng.uniform(0.0, 1.0, shape)
        if t.dtype.value == "uint8":
            (bs, bz), (ss, sz) = BOX_QUANT, SCORE_QUANT
            x = np.clip(np.round(x / bs + bz) if boxes else np.floor(x / ss) + sz, 0, 255)
        arrays[f"i{j}"] = x.astype(np.uint8 if t.dtype.value == "uint8" else np.float32)
    np.savez(model.with_suffix(".inputs.npz"), **arrays)


def detection_variant(
    one: bytes,
    size: tuple[int, int, int] | None = None,
    *,
    regular: bool = False,
    uint8: bool = False,
) -> bytes:
    """The one-op ``TFLite_Detection_PostProcess`` model ``one`` (cut from an SSD rebuild)
    changed through the schema's object API: ``size`` (N anchors, its own anchors repeated;
    C classes; D kept boxes), regular NMS (100 boxes a class), uint8 inputs (as the shipped
    per-tensor SSD files feed the op: :data:`BOX_QUANT`, :data:`SCORE_QUANT`)."""
    import flatbuffers
    import numpy as np
    from ai_edge_litert import schema_py_generated as schema
    from flatbuffers import flexbuffers

    m = schema.ModelT.InitFromPackedBuf(bytearray(one), 0)
    sg, op = m.subgraphs[0], m.subgraphs[0].operators[0]
    box, scores, anchors = (sg.tensors[i] for i in op.inputs[:3])
    opts = flexbuffers.Loads(bytes(op.customOptions))
    if size is not None:
        n, c, d = size
        box.shape, scores.shape = [1, n, 4], [1, n, c + 1]
        buf = m.buffers[anchors.buffer]
        old = np.frombuffer(bytes(buf.data), np.float32).reshape(-1, 4)
        buf.data = np.resize(old, (n, 4)).astype(np.float32).tobytes()
        anchors.shape = [n, 4]
        opts.update(num_classes=c, max_detections=d)
    if regular:
        opts.update(use_regular_nms=1, detections_per_class=100)
    op.customOptions = list(flexbuffers.Dumps(opts))
    if uint8:
        for t, (scale, zero) in ((box, BOX_QUANT), (scores, SCORE_QUANT)):
            qp = schema.QuantizationParametersT()
            qp.scale, qp.zeroPoint = [scale], [zero]
            t.type, t.quantization = schema.TensorType.UINT8, qp
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def detection_models(dest: Path, ssd: Path) -> list[Path]:
    """One-op ``TFLite_Detection_PostProcess`` models (cached, :func:`detection_variant`):
    fast NMS with float and with uint8 inputs (:data:`DETECTION_SHAPES`) and regular NMS
    with float inputs (:data:`DETECTION_REGULAR`), each with its inputs
    (:func:`detection_inputs`)."""
    from infercast.bench.runtimes.litert_ops import cut_single_ops

    dest.mkdir(parents=True, exist_ok=True)
    one = next(b for _, op, b in cut_single_ops(ssd.read_bytes()) if "Detection" in op)
    assert one is not None
    cases = [(s, False, q) for s in DETECTION_SHAPES for q in ("float", "uint8")]
    cases += [(s, True, "float") for s in DETECTION_REGULAR]
    paths = []
    for (n, c, d), regular, q in cases:
        kind = "regular" if regular else "fast"
        p = dest / f"detection-{kind}-{q}_{n}x{c}x{d}.tflite"
        paths.append(p)
        if p.exists() and p.with_suffix(".inputs.npz").exists():
            continue
        p.write_bytes(detection_variant(one, (n, c, d), regular=regular, uint8=q == "uint8"))
        detection_inputs(p)
    return paths


def models(a: argparse.Namespace) -> list[tuple[str, Path]]:
    """(set, model file): ``check`` for the published rows' architectures, ``train`` else."""
    from infercast.estimate.published.build import ensure
    from infercast.estimate.published.data import load_rows

    check = sorted({(r.recipe, r.quant) for r in load_rows() if r.target in CPU_TARGETS})
    built = ensure([*check, *EXTRA_MODELS])
    out = [("check", built[k]) for k in check]
    out += [("train", built[k]) for k in EXTRA_MODELS if k not in check]
    out += [("train", p) for p in micro_models(Path(a.work) / "micro")]
    ssd = built[("ssd_mobilenet_v1_300_pp", "int8pt")]
    out += [("train", p) for p in detection_models(Path(a.work) / "detection", ssd)]
    return out


def dataset(a: argparse.Namespace) -> list[dict[str, Any]]:
    """Every int8 operator of the models with its counts per ISA (cached in --work)."""
    import infercast
    from infercast.bench.runtimes.litert_ops import cut_single_ops, relu_model

    work = Path(a.work)
    cache = work / "dataset.json"
    if cache.exists() and not a.recount:
        return list(json.loads(cache.read_text()))
    relu = work / "relu.tflite"
    relu.write_bytes(relu_model())
    entries: list[dict[str, Any]] = []
    for part, path in models(a):
        g = infercast.load(path)
        nodes = {n.index: n for n in g.nodes}
        d = work / "ops" / path.stem
        d.mkdir(parents=True, exist_ok=True)
        for i, name, data in cut_single_ops(path.read_bytes()):
            n = nodes.get(i)
            if data is None or n is None:
                continue
            f = d / f"{i:03d}_{name}.tflite"
            f.write_bytes(data)
            if n.native_op == DETECTION:
                detection_inputs(f)
            dts = [g.tensors[t].dtype.value for t in (*n.inputs[:1], *n.outputs[:1]) if t]
            entries.append({"set": part, "model": path.stem, "index": i, "file": str(f),
                            "dtypes": dts, "op": asdict(op_shape(g, n))})  # fmt: skip
    files = [str(relu)] + [e["file"] for e in entries]
    for isa, cpu in ISAS.items():
        counts = count(files, cpu, a)
        base = counts[str(relu)] or 0.0
        for e in entries:
            v = counts.get(e["file"])
            e[isa] = None if v is None else max(v - base, 0.0)
    cache.write_text(json.dumps(entries))
    return entries


def fit(rows: list[tuple[str, list[float], float]]) -> dict[str, list[float]]:
    """Per kind, non-negative least squares of the counts on the terms (relative error)."""
    import numpy as np
    from scipy.optimize import nnls

    by: dict[str, list[tuple[list[float], float]]] = collections.defaultdict(list)
    for kind, x, y in rows:
        by[kind].append((x, y))
    out = {}
    for kind, rs in sorted(by.items()):
        if len(rs) < MIN_SAMPLES:
            continue
        xm = np.array([r[0] for r in rs])
        y = np.array([r[1] for r in rs])
        w = 1.0 / np.maximum(y, 2e3)
        c, _ = nnls(xm * w[:, None], y * w)
        out[kind] = [float(f"{v:.5g}") for v in c]
    return out


def check(coefs: dict[str, list[float]], rows: list[tuple[str, str, list[float], float]]) -> str:
    """Per operator (of > 1e5 instructions) and per model: predicted / counted."""
    import numpy as np

    errs = []
    per_model: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0])
    missing: collections.Counter[str] = collections.Counter()
    for model, kind, x, y in rows:
        c = coefs.get(kind)
        if c is None:
            missing[kind] += int(y)
            continue
        p = float(np.dot(c, x))
        per_model[model][0] += p
        per_model[model][1] += y
        if y > 1e5:
            errs.append(p / y - 1)
    ratios = [p / y for p, y in per_model.values() if y > 0]
    worst = max(max(r, 1 / r) for r in ratios)
    uncovered = ", ".join(f"{k} {v / 1e6:.1f} M" for k, v in missing.most_common(4)) or "none"
    return (f"operators median |error| {statistics.median(abs(e) for e in errs):.1%}, 90th "
            f"percentile {float(np.percentile(np.abs(errs), 90)):.1%}; models median |error| "
            f"{statistics.median(abs(r - 1) for r in ratios):.1%}, worst {worst:.2f}x; "
            f"instructions of kinds not in the fit: {uncovered}")  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--setup", action="store_true", help="install the emulator and arm64 Python")
    ap.add_argument("--root", default="/opt/arm64", help="the arm64 Debian root")
    ap.add_argument("--site", default="/opt/arm64site", help="the aarch64 wheels, unpacked")
    ap.add_argument("--plugin", default="/opt/qplug/libicount.so", help="the counting plugin")
    ap.add_argument("--work", default=str(Path.home() / ".cache/infercast/aarch64-insns"))
    ap.add_argument("--recount", action="store_true", help="count again (else the cache)")
    ap.add_argument("--write", action="store_true", help=f"write estimate/data/{DATA_FILE}")
    a = ap.parse_args()
    if a.setup:
        setup(Path(a.root), Path(a.site), Path(a.plugin))
        return 0
    if not shutil.which("qemu-aarch64") or not Path(a.plugin).exists():
        print("qemu-aarch64 or the plugin is missing: run with --setup first", file=sys.stderr)
        return 2
    Path(a.work).mkdir(parents=True, exist_ok=True)
    entries = dataset(a)
    table: dict[str, dict[str, list[float]]] = {}
    checks: dict[str, str] = {}
    for isa in ISAS:
        rows = []
        for e in entries:
            int8 = any(d in ("int8", "uint8") for d in e["dtypes"])
            if e.get(isa) is None or not (int8 or e["op"]["native"] == DETECTION):
                continue
            op = e["op"]
            shape = OpShape(op["native"], op["ins"], op["outs"], op["attrs"],
                            {int(k): v for k, v in op["consts"].items()},
                            op.get("in_dtypes", ()))  # fmt: skip
            f = features(shape)
            if f is not None:
                rows.append((e["set"], e["model"], f[0], f[1], float(e[isa])))
        train = fit([(k, x, y) for s, _, k, x, y in rows if s == "train"])
        held = [(m, k, x, y) for s, m, k, x, y in rows if s == "check"]
        checks[isa] = check(train, held)
        table[isa] = fit([(k, x, y) for _, _, k, x, y in rows])
        n_models = len({m for _, m, *_ in rows})
        print(f"{isa}: {len(rows)} operators of {n_models} models, {len(table[isa])} kinds")
        n_held = len({m for m, *_ in held})
        print(f"  fitted on the keras and one-layer models, checked on the {n_held} "
              f"published-row architectures: {checks[isa]}")  # fmt: skip
        print(f"  fitted on all (the table), in-sample: {check(table[isa], held)}")
    if a.write:
        path = REPO / "src/infercast/estimate/data" / DATA_FILE
        old = json.loads(path.read_text()) if path.exists() else {}
        prov = dict(old.get("provenance", {}))
        sets = collections.Counter(e["set"] for e in {e["model"]: e for e in entries}.values())
        micro = sum(1 for m in {e["model"] for e in entries} if "x" in m.rsplit("_", 1)[-1])
        prov["measured"] = (
            f"every operator of {sum(sets.values())} int8 models cut into a one-operator "
            "model (infercast.bench.runtimes.litert_ops.cut_single_ops): the instructions of "
            "one invoke() minus those of a one-element RELU model's"
        )
        prov["models"] = (
            f"the {sets['check']} int8 architectures of the i.MX CPU rows of "
            f"published-latency.csv, {sets['train'] - micro} further int8 models of the same "
            f"recipes (keras.applications, SSD, U-Net), {micro} one-layer models of this "
            "script (element-wise, pooling, resize, data movement at 8 shapes; TFLite's SSD "
            "post-processing at 4 anchor counts x 3 class counts x 2 kept-box counts, float "
            "and uint8 inputs, and regular NMS at 6 sizes)"
        )
        prov["check"] = {
            isa: "fitted on the keras.applications and one-layer models only, then predicting "
            "the published-row architectures' operators: " + s
            for isa, s in checks.items()
        }
        doc = {"format": "infercast.aarch64-insns/1", "provenance": prov, "coefficients": table}
        path.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
