"""The permutes TIM-VX's layout pass inserts for the VX delegate (infercast.estimate.layout).

The model is a keras channel shuffle (reshape, transpose, reshape between two convs), a
squeezed global pool into a dense head, and a conv output returned by the graph, converted by
the real TFLite converter. TIM-VX's rules (``src/tim/transform/layout_inference.cc`` and
``ops/*_layout_inference.h``, see the module) put a permute before the first conv (the
model's NHWC input), before the first reshape (a conv's channels-first output), before the
second conv (the reshape's channels-last output) and at the graph's conv output; the
1x1xC pooled map is a view (ovxlib's permute ``_is_same_memory_shape``), the transpose
composes. The NNAPI target states no such pass and gets none.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import run_keras_script
from infercast import estimate, load
from infercast.estimate.fit import Batch, Sample, fit_values, predict
from infercast.estimate.forecast import Params, kernel_time
from infercast.estimate.layout import layout_permutes, moves_data
from infercast.targets import load_target

BUILD = """
import sys
from pathlib import Path
import keras
from keras import layers as L
from infercast.estimate.published.recipes import convert
keras.utils.set_random_seed(0)
inp = keras.Input((16, 16, 3), batch_size=1)
c1 = L.Conv2D(16, 3, padding="same", activation="relu")(inp)
x = L.Reshape((256, 2, 8))(c1)
x = L.Permute((1, 3, 2))(x)
x = L.Reshape((16, 16, 16))(x)
c2 = L.Conv2D(8, 1, activation="relu")(x)
g = L.GlobalAveragePooling2D(keepdims=True)(c1)
h = L.Dense(4)(L.Flatten()(g))
m = keras.Model(inp, [c2, h])
Path(sys.argv[1]).write_bytes(convert(m, "int8"))
"""


@pytest.fixture(scope="module")
def shuffle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("layout") / "shuffle.tflite"
    run_keras_script(BUILD, str(p))
    return p


def test_the_vx_delegate_permutes_where_tim_vx_layout_pass_does(shuffle: Path) -> None:
    g = load(shuffle)
    vx = load_target("imx8mp-npu-vx")
    pl = vx.placement
    found = layout_permutes(
        g,
        dict.fromkeys((n.index for n in g.nodes), True),
        frozenset(pl.channels_first_ops),
        frozenset(pl.layout_reset_ops),
    )
    nodes = {n.index: n for n in g.nodes}
    got = [(nodes[i].native_op, g.tensors[t].shape) for i, t in found]
    convs = [n for n in g.nodes if n.native_op == "CONV_2D"]
    assert got == [
        ("CONV_2D", (1, 16, 16, 3)),  # the model's NHWC input, before the first conv
        ("RESHAPE", (1, 16, 16, 16)),  # the conv's channels-first output, reversed
        ("CONV_2D", (1, 16, 16, 16)),  # the reshape's channels-last output
        ("CONV_2D", (1, 16, 16, 8)),  # the graph's output, at its producer
    ]
    assert found[0][0] == convs[0].index and found[2][0] == found[3][0] == convs[1].index
    # The pooled 1x1x16 map before the dense head moves no data: a view, no permute.
    pooled = [t for t in g.tensors.values() if t.shape == (1, 1, 1, 16)]
    assert pooled and not any(moves_data(t) for t in pooled)


def test_the_permutes_cost_a_movement_kernel_each_in_the_layers_that_need_them(
    shuffle: Path,
) -> None:
    vx = estimate(shuffle, "imx8mp-npu-vx")
    with_layout = {ly.index: ly for ly in vx.layers if ly.layout_s > 0}
    assert len(with_layout) == 3  # the two convs and the first reshape
    p = vx.params
    for k, w in vx.works:
        if k.anchor not in with_layout:
            assert not w.permutes
            continue
        assert all(x.op_class == "movement" and x.unit == "npu" for x in w.permutes)
        # each permute reads and writes the tensor once, with its own per-layer cost
        assert all(x.act_bytes == 2 * x.ops for x in w.permutes)  # int8: a byte an element
        layout = sum(kernel_time(x, p).latency_s for x in w.permutes)
        assert with_layout[k.anchor].layout_s == pytest.approx(layout)
        assert layout > len(w.permutes) * p.overhead_s["npu"]
    assert vx.latency_s == pytest.approx(sum(ly.latency_s for ly in vx.layers) + vx.invoke_s)
    nnapi = estimate(shuffle, "imx8mp-npu-nnapi")
    assert not load_target("imx8mp-npu-nnapi").placement.channels_first_ops
    assert all(ly.layout_s == 0 for ly in nnapi.layers)


def test_the_fit_sees_the_permutes_as_kernels(shuffle: Path) -> None:
    """The vectorised evaluation the fits use counts every permute as the reference
    per-kernel forecast does, and a fit on rows generated with a known per-layer cost
    recovers it with the permutes in the rows."""
    vx = estimate(shuffle, "imx8mp-npu-vx")
    works = tuple(w for _, w in vx.works)
    assert sum(len(w.permutes) for w in works) == 4
    p = Params.of(load_target("imx8mp-npu-vx"))
    s = Sample("shuffle", works, 1.0)
    b = Batch([s], p, [])
    assert list(b.latencies(b.full())) == pytest.approx([predict(s, p)], rel=1e-9)
    key = "units.npu.op_overhead_s"
    truth = p.with_values({key: 3e-5})
    rows = [Sample("a", works, predict(s, truth)), Sample("b", works[:3], 0.0)]
    rows[1] = Sample("b", works[:3], predict(rows[1], truth))
    f = fit_values(rows, p, [key], prior_weight=0.0)
    assert f.values[key] == pytest.approx(3e-5, rel=1e-4)


def test_a_misspelt_op_in_a_placement_list_is_a_clear_error(tmp_path: Path) -> None:
    from infercast.targets.schema import TargetError

    f = tmp_path / "mine.toml"
    f.write_text('extends = "imx8mp-npu-vx"\n[placement]\nlayout_reset_ops = ["reshap"]\n')
    with pytest.raises(TargetError, match=r"layout_reset_ops has 'reshap'.*did you mean 'reshape'"):
        load_target(str(f))
