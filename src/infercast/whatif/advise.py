"""Ranked, concrete advice for a model on a target, each item's gain computed by running
the what-if that carries it out (never estimated by rule of thumb).

What is looked for (only where the target's data makes it matter):

* ``kernel`` -- layers the accelerator refuses for their kernel size: the largest
  smaller kernel that it takes (``DEPTHWISE_CONV_2D:5x5=3x3`` on the K210 KPU);
* ``quantization`` -- per-channel int8 weights on a target whose file charges for
  them (a unit's ``per_channel_slowdown`` or ``per_channel_pass_s_per_element``): the
  per-tensor variant; a float model on an integer accelerator: the int8 variant;
* ``fallback_op`` -- activations that fall back to the CPU, replaced by one the
  accelerator runs (``HARD_SWISH=RELU6``), with the CPU islands and crossings saved;
* ``cpu_island`` -- CPU segments between accelerator segments no replacement
  removes: their CPU time and crossings;
* ``channels`` -- channel counts just above a multiple of a unit's vector width
  (``channel_multiple``; Ethos-U's 16 -> 17 trap): the count rounded down;
* ``resolution`` / ``width`` -- a memory that is exceeded: the largest input size
  and the largest width multiplier that fit (``--fit`` searches);
* ``weight_streaming`` -- weights beyond a cache that streams every inference (the
  Edge TPU's parameter cache): the largest width whose weights stay cached.

Changing an activation, a kernel size, the width or the input size changes what
the model computes: the advice says so; retraining is the user's part.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from infercast.ir.graph import Graph, Shape
from infercast.ir.views import kernel_dims
from infercast.targets import Target
from infercast.targets.placement import LayerPlacement, PlacementReport
from infercast.whatif.evaluate import VariantResult, evaluate, model_dtype, model_quant
from infercast.whatif.ops import (
    ACTIVATIONS,
    KERNEL_OPS,
    activation_of,
    channel_axis,
    input_resolution,
    total_stride,
)
from infercast.whatif.search import resolution_steps, search
from infercast.whatif.spec import DTypeName, Replacement, VariantError, VariantSpec

MIN_GAIN_S = 1e-6
"""Latency gains below this (a microsecond) are not advice."""

# Activations tried in place of one that falls back, best first (cheaper, or the
# piecewise-linear approximation of the original: hard-swish ~ x * relu6(x + 3) / 6).
ALTERNATIVES: dict[str, tuple[str, ...]] = {
    "hard_swish": ("relu6", "relu"),
    "gelu": ("relu", "relu6"),
    "elu": ("relu", "relu6"),
    "leaky_relu": ("relu", "relu6"),
    "sigmoid": ("hard_sigmoid", "relu6"),
    "hard_sigmoid": ("sigmoid", "relu6"),
    "tanh": ("relu_n1_to_1",),
    "relu6": ("relu",),
    "relu_n1_to_1": ("relu6",),
}


@dataclass(frozen=True)
class Advice:
    kind: str
    message: str
    layers: tuple[str, ...]
    latency_gain_s: float | None
    """Forecast seconds saved per inference (None: not computed by a what-if)."""
    memory_gain_bytes: int | None
    """Bytes saved in the memory the advice is about (None: not about memory)."""
    variant: str | None = None
    """The what-if that gives the gain (its label, as ``whatif`` names variants)."""
    fixes_fit: bool = False
    """The change makes a model that does not fit, fit."""


@dataclass(frozen=True)
class Island:
    """A CPU segment between accelerator segments."""

    indices: tuple[int, ...]
    names: tuple[str, ...]
    cpu_s: float
    transfer_s: float
    crossing_bytes: int

    @property
    def cost_s(self) -> float:
        return self.cpu_s + self.transfer_s


@dataclass(frozen=True)
class AdviceResult:
    target: Target
    model: str
    base: VariantResult
    advice: tuple[Advice, ...]
    notes: tuple[str, ...] = ()
    graph: Graph | None = field(default=None, repr=False)


class _Advisor:
    def __init__(self, graph: Graph, target: Target) -> None:
        self.graph = graph
        self.target = target
        self.base = evaluate(graph, VariantSpec(), target, keep=True)
        assert self.base.placement is not None and self.base.forecast is not None
        self.placement: PlacementReport = self.base.placement
        self.items: list[Advice] = []
        self.notes: list[str] = []
        self.cache: dict[VariantSpec, VariantResult | None] = {}
        self.has_acc = self.placement.has_accelerator

    # ----- helpers ------------------------------------------------------- #

    def run(self, spec: VariantSpec) -> VariantResult | None:
        if spec not in self.cache:
            try:
                self.cache[spec] = evaluate(self.graph, spec, self.target, keep=True)
            except VariantError as exc:
                self.notes.append(f"what-if {spec.label()} could not be made: {exc}")
                self.cache[spec] = None
        return self.cache[spec]

    def gain(self, v: VariantResult) -> float:
        return self.base.totals.latency_s - v.totals.latency_s

    def faster_layers(self, v: VariantResult, by: float = 0.01) -> set[int]:
        """Layers whose forecast latency the variant ``v`` cuts by more than ``by``."""
        assert self.base.forecast is not None and v.forecast is not None
        before = {ly.index: ly.latency_s for ly in self.base.forecast.layers}
        return {
            ly.index
            for ly in v.forecast.layers
            if ly.index in before and ly.latency_s < before[ly.index] * (1 - by)
        }

    def cpu_layers(self, v: VariantResult) -> set[int]:
        assert v.placement is not None
        return {ly.index for ly in v.placement.layers if not ly.folded and ly.placement == "cpu"}

    def moved(self, v: VariantResult, indices: Sequence[int]) -> int:
        cpu = self.cpu_layers(v)
        return sum(1 for i in indices if i not in cpu)

    def fits_note(self, v: VariantResult) -> str:
        if self.base.totals.fits or not v.totals.fits:
            return ""
        return "; then it fits"

    def add(self, item: Advice) -> None:
        self.items.append(item)

    @property
    def acc_name(self) -> str:
        acc = self.target.accelerator
        return acc.description or acc.name if acc is not None else "accelerator"

    def fallback_layers(self) -> list[LayerPlacement]:
        if not self.has_acc:
            return []
        return [ly for ly in self.placement.layers if not ly.folded and ly.placement == "cpu"]

    # ----- kinds --------------------------------------------------------- #

    def kernels(self) -> None:
        """Kernel sizes the accelerator refuses: the largest smaller one it takes."""
        groups: dict[tuple[str, tuple[int, ...]], list[LayerPlacement]] = {}
        for ly in self.fallback_layers():
            node = self.graph.nodes[ly.index]
            if node.op not in KERNEL_OPS or not any("kernel" in r.check for r in ly.reasons):
                continue
            wi = int(node.attrs.get("weight_input", 1))
            w = self.graph.tensors.get(node.inputs[wi]) if wi < len(node.inputs) else None
            if w is None or not w.is_static:
                continue
            k = tuple(kernel_dims(w, str(node.attrs.get("weight_layout", "OIHW"))).spatial)
            if len(k) != 2 or k[0] != k[1]:
                continue
            groups.setdefault((node.native_op, k), []).append(ly)
        for (native, k), layers in groups.items():
            idx = [ly.index for ly in layers]
            reason = next(r for r in layers[0].reasons if "kernel" in r.check)
            for size in range(k[0] - 2, 0, -2):
                rep = Replacement(native, native, (k[0], k[1]), (size, size))
                v = self.run(VariantSpec(replace=(rep,)))
                if v is None:
                    continue
                n = self.moved(v, idx)
                if n == 0:
                    continue
                g = self.gain(v)
                self.add(
                    Advice(
                        "kernel",
                        f"{len(layers)} {native} layer(s) with {k[0]}x{k[1]} kernels run on the "
                        f"CPU ({reason.text}); as {size}x{size}, {n} of them run on the "
                        f"{self.acc_name}: {_gain_text(g)}{self.fits_note(v)} "
                        f"({_macs_change(self.base, v)}; retrain)",
                        tuple(ly.name for ly in layers),
                        g,
                        self.base.totals.weight_bytes - v.totals.weight_bytes,
                        v.label,
                        fixes_fit=not self.base.totals.fits and v.totals.fits,
                    )
                )
                break

    def quantization(self) -> None:
        dt = model_dtype(self.graph)
        q = model_quant(self.graph)
        if dt == "int8" and q == "per-channel":
            v = self.run(VariantSpec(dtype="int8", quant="per-tensor"))
            if v is None:
                return
            g = self.gain(v)
            if g <= MIN_GAIN_S:
                return
            # The layers the what-if speeds up, and the target's own words for why (the
            # placement notes of those layers).
            faster = self.faster_layers(v)
            noted = [ly for ly in self.placement.layers if ly.index in faster]
            notes = sorted({n.text for ly in noted for n in ly.notes})
            why = "; ".join(notes) if notes else "the target's cost model"
            self.add(
                Advice(
                    "quantization",
                    f"per-channel int8 weights: {why} on {self.target.name}; per-tensor "
                    f"weights: {_gain_text(g)} (re-quantise; per-tensor costs accuracy)",
                    tuple(ly.name for ly in noted),
                    g,
                    None,
                    v.label,
                )
            )
            return
        if dt.startswith("fp") and self.has_acc:
            best: VariantResult | None = None
            choices: tuple[DTypeName, ...] = ("int8", "fp16")
            for d in choices:
                if d == dt:
                    continue
                v = self.run(VariantSpec(dtype=d))
                if v is not None and (best is None or v.totals.latency_s < best.totals.latency_s):
                    best = v
            if best is None:
                return
            g = self.gain(best)
            mem = self.base.totals.weight_bytes - best.totals.weight_bytes
            if g <= MIN_GAIN_S and not (best.totals.fits and not self.base.totals.fits):
                return
            moved = len(self.base.fallback_layers) - len(best.fallback_layers)
            self.add(
                Advice(
                    "quantization",
                    f"the model computes in {dt}; as {best.dtype}, {max(moved, 0)} more layer(s) "
                    f"run on the {self.acc_name}: {_gain_text(g)}, weights "
                    f"{_size(mem)} smaller{self.fits_note(best)} (quantise; check accuracy)",
                    tuple(self.base.fallback_layers),
                    g,
                    mem,
                    best.label,
                    fixes_fit=not self.base.totals.fits and best.totals.fits,
                )
            )

    def fallback_ops(self) -> set[int]:
        """Activations that fall back, replaced by one the accelerator runs."""
        covered: set[int] = set()
        by_act: dict[str, list[LayerPlacement]] = {}
        for ly in self.fallback_layers():
            node = self.graph.nodes[ly.index]
            act = activation_of(self.graph, node)
            if act is not None:
                by_act.setdefault(act, []).append(ly)
        for act, layers in by_act.items():
            idx = [ly.index for ly in layers]
            native = layers[0].native_op
            best: tuple[float, str, VariantResult, int] | None = None
            for alt in ALTERNATIVES.get(act, ()):
                if self.graph.format == "tflite" and ACTIVATIONS[alt][0] is None:
                    continue
                spec = VariantSpec(replace=(Replacement(act, alt),))
                v = self.run(spec)
                if v is None:
                    continue
                n = self.moved(v, idx)
                g = self.gain(v)
                if n and g > MIN_GAIN_S and (best is None or g > best[0]):
                    best = (g, alt, v, n)
            if best is None:
                continue
            g, alt, v, n = best
            covered.update(idx)
            islands = self.islands_of(idx)
            isl = ""
            if islands:
                cost = sum(isl.cost_s for isl in islands)
                isl = (
                    f"; it makes {len(islands)} CPU island(s) costing "
                    f"{_ms(cost)} with their crossings"
                )
            reason = layers[0].reasons[0].text if layers[0].reasons else "not supported"
            shown = ACTIVATIONS[alt][0] if self.graph.format == "tflite" else alt.upper()
            self.add(
                Advice(
                    "fallback_op",
                    f"{len(layers)} {native} layer(s) run on the CPU ({reason}){isl}; "
                    f"as {shown}, {n} run on the {self.acc_name}: {_gain_text(g)} "
                    "(changes the function: retrain)",
                    tuple(ly.name for ly in layers),
                    g,
                    None,
                    v.label,
                )
            )
        return covered

    def islands_of(self, indices: Sequence[int]) -> list[Island]:
        """The CPU islands that hold one of ``indices``."""
        return [isl for isl in self.islands() if set(isl.indices) & set(indices)]

    def islands(self) -> list[Island]:
        segs = list(self.placement.segments)
        fc = self.base.forecast
        assert fc is not None
        lat = {ly.index: ly for ly in fc.layers}
        out = []
        for i, s in enumerate(segs):
            if s.processor != "cpu" or i == 0 or i == len(segs) - 1:
                continue
            members = [
                ly
                for ly in self.placement.layers
                if not ly.folded and s.first_layer <= ly.index <= s.last_layer
            ]
            idx = tuple(ly.index for ly in members)
            cpu_s = sum(
                lat[j].compute_s + lat[j].memory_s + lat[j].overhead_s for j in idx if j in lat
            )
            inside = set(idx)
            cross = [
                c
                for c in self.placement.crossings
                if not c.boundary
                and ((c.producer in inside) or any(k in inside for k in c.consumers))
            ]
            nbytes = sum(c.bytes or 0 for c in cross)
            tr = sum(self.target.crossing.seconds(c.bytes or 0) for c in cross)
            out.append(Island(idx, tuple(ly.name for ly in members), cpu_s, tr, nbytes))
        return out

    def cpu_islands(self, covered: set[int]) -> None:
        """CPU islands no replacement removes, grouped by the ops they hold (the five
        costliest groups)."""
        groups: dict[tuple[str, ...], list[Island]] = {}
        for isl in self.islands():
            if set(isl.indices) & covered:
                continue
            ops = tuple(sorted({self.graph.nodes[i].native_op for i in isl.indices}))
            groups.setdefault(ops, []).append(isl)
        ranked = sorted(groups.items(), key=lambda kv: -sum(i.cost_s for i in kv[1]))
        for ops, isls in ranked[:5]:
            cpu = sum(i.cpu_s for i in isls)
            tr = sum(i.transfer_s for i in isls)
            nbytes = sum(i.crossing_bytes for i in isls)
            names = tuple(n for i in isls for n in i.names)
            reasons = sorted(
                {
                    r.text
                    for ly in self.placement.layers
                    if ly.index in {j for i in isls for j in i.indices}
                    for r in ly.reasons[:1]
                }
            )
            self.add(
                Advice(
                    "cpu_island",
                    f"{len(isls)} CPU island(s) of {'+'.join(ops)} between {self.acc_name} "
                    f"segments: {_ms(cpu)} on the CPU plus {_ms(tr)} moving "
                    f"{_size(nbytes)} across ({'; '.join(reasons[:2])}); no replacement "
                    "infercast knows moves them",
                    names,
                    None,
                    None,
                )
            )

    def channels(self) -> None:
        """Channel counts just above a multiple of a unit's vector width."""
        units = {
            u.name: u.channel_multiple for u in self.target.units.values() if u.channel_multiple > 1
        }
        if not units:
            return
        flagged: list[tuple[LayerPlacement, int, int, int]] = []
        for ly in self.placement.layers:
            m = units.get(ly.unit)
            if m is None or ly.folded or (ly.placement == "cpu" and self.has_acc):
                continue
            node = self.graph.nodes[ly.index]
            if node.op not in ("conv", "fully_connected", "gemm", "matmul"):
                continue
            outs = self.graph.output_tensors(node)
            if not outs or not outs[0].is_static or not outs[0].shape:
                continue
            c = int(outs[0].shape[channel_axis(self.graph, len(outs[0].shape))] or 0)
            if c > m and 0 < c % m <= m // 4:
                flagged.append((ly, c, c - c % m, m))
        if not flagged:
            return
        spec = VariantSpec(channels=tuple((f"#{ly.index}", new) for ly, _, new, _ in flagged))
        v = self.run(spec)
        if v is None:
            return
        g = self.gain(v)
        if g <= MIN_GAIN_S:
            return
        pairs = ", ".join(f"{c}->{new}" for _, c, new, _ in flagged[:6])
        self.add(
            Advice(
                "channels",
                f"{len(flagged)} layer(s) have channel counts just above a multiple of "
                f"{flagged[0][3]} (the unit works in groups of {flagged[0][3]}, so {flagged[0][1]} "
                f"costs as {flagged[0][2] + flagged[0][3]}): {pairs} gives {_gain_text(g)} "
                "(retrain)",
                tuple(ly.name for ly, _, _, _ in flagged),
                g,
                self.base.totals.weight_bytes - v.totals.weight_bytes,
                v.label,
            )
        )

    def memory_fit(self) -> None:
        """A memory that is exceeded: the largest input size and width that fit."""
        over = {
            n: m for n, m in self.base.memories.items() if not m.fits and m.on_overflow == "fail"
        }
        if not over:
            return
        names = ", ".join(
            f"{n} needs {_size(m.required_bytes)} of {_size(m.capacity_bytes)}"
            for n, m in over.items()
        )
        res = input_resolution(self.graph)
        found_any = False
        if res is not None:
            stride = total_stride(self.graph)
            lo = max(stride * 2, 32)
            if lo < res[0]:
                steps = [
                    (h, round(h * res[1] / res[0]))
                    for h in resolution_steps(self.graph, lo, res[0])
                ]
                fs = search(
                    self.graph, self.target, VariantSpec(), resolutions=steps, evaluator=self.run
                )
                if fs.best is not None:
                    found_any = True
                    self._fit_item(
                        "resolution", fs.best, over, names, f"input {_res(fs.best.resolution)}"
                    )
        fw = search(self.graph, self.target, VariantSpec(), widths=[0.25, 1.0], evaluator=self.run)
        if fw.best is not None:
            found_any = True
            self._fit_item("width", fw.best, over, names, f"width {fw.best.width:g}")
        if not found_any:
            weights = self.base.totals.weight_bytes
            lo_px = max(total_stride(self.graph) * 2, 32)
            self.add(
                Advice(
                    "memory",
                    f"does not fit: {names}; no input size down to {lo_px} px and no width "
                    f"down to 0.25 fits (weights alone: {_size(weights)})",
                    (),
                    None,
                    None,
                    fixes_fit=False,
                )
            )

    def _fit_item(
        self, kind: str, v: VariantResult, over: Mapping[str, Any], names: str, what: str
    ) -> None:
        mem = sum(
            over[n].required_bytes - v.memories[n].required_bytes for n in over if n in v.memories
        )
        g = self.gain(v)
        self.add(
            Advice(
                kind,
                f"does not fit ({names}); the largest {kind} that fits is {what}: "
                f"{_size(mem)} less, {_gain_text(g)} ({_macs_change(self.base, v)}; "
                + ("accuracy drops with the input size)" if kind == "resolution" else "retrain)"),
                (),
                g,
                mem,
                v.label,
                fixes_fit=True,
            )
        )

    def streaming(self) -> None:
        over = {
            n: m for n, m in self.base.memories.items() if not m.fits and m.on_overflow == "stream"
        }
        for name, m in over.items():
            streamed = m.required_bytes - m.capacity_bytes

            def cached(v: VariantResult, name: str = name) -> bool:
                f = v.memories.get(name)
                return f is not None and f.fits

            found = search(
                self.graph,
                self.target,
                VariantSpec(),
                widths=[0.25, 1.0],
                evaluator=self.run,
                accept=cached,
            )
            best = found.best
            text = (
                f"{_size(streamed)} of weights beyond {name} "
                f"({_size(m.capacity_bytes)}) are streamed over the link every inference"
            )
            if best is None:
                self.add(Advice("weight_streaming", text, (), None, streamed))
                continue
            g = self.gain(best)
            self.add(
                Advice(
                    "weight_streaming",
                    f"{text}; at width {best.width:g} the weights stay cached: {_gain_text(g)} "
                    f"({_macs_change(self.base, best)}; retrain)",
                    (),
                    g,
                    self.base.memories[name].required_bytes - best.memories[name].required_bytes,
                    best.label,
                )
            )

    # ----- all ----------------------------------------------------------- #

    def advise(self) -> list[Advice]:
        self.memory_fit()
        self.kernels()
        self.quantization()
        covered = self.fallback_ops()
        self.cpu_islands(covered)
        self.channels()
        self.streaming()
        return sorted(
            self.items,
            key=lambda a: (
                not a.fixes_fit,
                -(a.latency_gain_s or 0.0),
                -(a.memory_gain_bytes or 0),
            ),
        )


def _ms(s: float) -> str:
    """Seconds in a message: milliseconds, as the forecast's gains are quoted."""
    return f"{s * 1e3:.2f} ms"


def _size(n: float) -> str:
    """Bytes in a message: KiB below a MiB, else MiB."""
    return f"{n / 1024:.1f} KiB" if abs(n) < 1 << 20 else f"{n / (1 << 20):.1f} MiB"


def _gain_text(g: float) -> str:
    if g >= 0:
        return f"-{_ms(g)} per inference"
    return f"+{_ms(-g)} per inference"


def _macs_change(base: VariantResult, v: VariantResult) -> str:
    if base.macs == 0:
        return "MACs unchanged"
    r = v.macs / base.macs - 1
    return f"MACs {r:+.0%}" if abs(r) >= 0.005 else "MACs unchanged"


def _res(r: tuple[int, int] | None) -> str:
    if r is None:
        return "?"
    return f"{r[0]}x{r[1]}"


def advise(
    model: str | os.PathLike[str] | Graph,
    target: str | os.PathLike[str] | Target,
    input_shapes: Mapping[str, Shape] | None = None,
) -> AdviceResult:
    """Ranked advice for ``model`` on ``target`` (see the module docstring)."""
    from infercast.whatif import _graph, _target

    graph = _graph(model, input_shapes)
    tgt = _target(target)
    adv = _Advisor(graph, tgt)
    items = adv.advise()
    return AdviceResult(
        tgt, str(graph.path or graph.name), adv.base.slim(), tuple(items), tuple(adv.notes), graph
    )


__all__ = ["Advice", "AdviceResult", "advise"]
