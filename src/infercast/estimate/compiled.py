"""A forecast that takes the Edge TPU compiler's own parameter split.

edgetpu_compiler sizes the on-chip parameter cache per model (``size_varies`` on the
Edge TPU targets: 1.1 to 8.2 MiB in published compile logs), and writes its decision into
the compiled model (``infercast.frontends.edgetpu_package``): the bytes cached on chip and
the bytes streamed from host memory every inference. Given that file, the forecast of the
model as it was before compilation streams exactly the compiler's byte count: the target's
streaming cache is resized to the weights it holds minus the compiler's streamed bytes.
Which layers stream stays the forecast's rule (the cache fills in execution order); the
compiler's per-layer choice is not in the package's summary fields.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from infercast.analysis.memory import MemoryAnalysis
from infercast.errors import InfercastError
from infercast.frontends.edgetpu_package import compiled_split
from infercast.ir.graph import Graph
from infercast.targets.placement import place
from infercast.targets.schema import Target


def streaming_cache(target: Target) -> str:
    """The memory that caches accelerator weights and streams the rest, or an error naming
    the target when it has none."""
    names = [
        m.name
        for m in target.memories.values()
        if m.on_overflow == "stream" and "accelerator_weights" in m.holds
    ]
    if not names:
        raise InfercastError(
            f"target {target.name} has no parameter cache that streams what it cannot hold: "
            "a compiled Edge TPU model applies to an Edge TPU target (edgetpu-usb, "
            "edgetpu-pcie, edgetpu-usb-rpi4 or a file extending one)"
        )
    return names[0]


def with_compiled_cache(
    graph: Graph, target: Target, compiled: str | Path, memory: MemoryAnalysis | None = None
) -> tuple[Target, tuple[str, ...]]:
    """``target`` with its parameter cache sized so that the forecast streams the bytes the
    compiled model streams, and the note that says so."""
    name = streaming_cache(target)
    cached, streamed = compiled_split(compiled)
    fit = place(graph, target, memory=memory).fit.get(name)
    held = fit.parts.get("accelerator_weights_bytes", 0) if fit is not None else 0
    size = max(held - streamed, 1)
    # A stated size (size_varies false) is the room for weights: the compiler's split
    # already leaves the activations it keeps on chip their room.
    mem = dataclasses.replace(target.memories[name], size_bytes=size, size_varies=False)
    out = dataclasses.replace(target, memories={**target.memories, name: mem})
    note = (
        f"{name}: sized from {Path(compiled).name}, where edgetpu_compiler cached {cached:,} B "
        f"of parameters and streams {streamed:,} B every inference; this model's "
        f"{held:,} B of accelerator weights are taken to stream {min(streamed, held):,} B"
    )
    if held and streamed > held:
        note += (
            " (the compiled model streams more than this model holds: check that it was "
            "compiled from this file)"
        )
    return out, (note,)
