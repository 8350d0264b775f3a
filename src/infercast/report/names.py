"""One short, unique name per layer, the same in every command's table and in the HTML report.

Layer names come from the model file. TFLite names an op after its output
tensor, which the converter joins from every fused TF op
(``"mobilenetv2_1.00_224_1/block_1_expand_relu_1/Relu6;mobilenetv2_1.00_224_1/…"``);
Keras-through-tf2onnx names repeat a scope path (``…/conv_dw_1_bn_1/batchnorm/mul_1``).
Taking the last path segments, as tables used to, gives ``batchnorm/mul_1`` for a
dozen different layers. :func:`layer_labels` keeps what tells layers apart:

1. the first ``;``-joined part (the op that names the fused group);
2. less the leading path segments that every layer shares (the model's scope);
3. cut in the middle to ``width`` characters (head and tail kept), so the layer
   scope and the op both stay visible;
4. a label that would still repeat gets `` (2)``, `` (3)``… in execution order.

Control characters and line breaks are escaped (a name is one line of text).
The JSON and CSV outputs keep the full name.
"""

from __future__ import annotations

from collections.abc import Sequence

from infercast.ir.graph import Graph
from infercast.report.text import shown

LABEL_WIDTH = 32
"""Width of a label, characters: fits the name column of an 80-column table."""


def _middle_cut(s: str, width: int) -> str:
    if len(s) <= width:
        return s
    tail = (width - 1) // 2
    head = width - 1 - tail
    return s[:head] + "…" + s[-tail:]


def _head_cut(s: str, width: int) -> str:
    """Cut keeping the first path segment whole (the layer's scope: ``conv2d_5/…ernel``)."""
    if len(s) <= width or "/" not in s:
        return _middle_cut(s, width)
    head = s.split("/", 1)[0] + "/"
    if len(head) > width - 6:
        return _middle_cut(s, width)
    return head + "…" + s[-(width - len(head) - 1) :]


def _common_scope(paths: list[list[str]]) -> int:
    """How many leading segments every multi-segment path shares (always leaving one)."""
    multi = [p for p in paths if len(p) > 1]
    if len(multi) < 2:
        return 0
    n = min(len(p) for p in multi) - 1
    first = multi[0]
    k = 0
    while k < n and all(p[k] == first[k] for p in multi):
        k += 1
    return k


def layer_labels(
    names: Sequence[str], width: int = LABEL_WIDTH, prefixes: Sequence[str] | None = None
) -> list[str]:
    """Short labels for ``names`` (in execution order), unique within the list.

    ``prefixes`` (one per name, e.g. a subgraph's ``"body:"``) are put before the cut name.
    """
    width = max(width, 8)
    pre = [shown(p) for p in prefixes] if prefixes is not None else [""] * len(names)
    paths = [(shown(n).split(";", 1)[0] or shown(n) or "?").split("/") for n in names]
    scope = _common_scope(paths)
    full = ["/".join(p[scope:] if len(p) > scope else p[-1:]) for p in paths]
    room = [max(width - len(x), 8) for x in pre]
    base = [x + _middle_cut(f, r) for x, f, r in zip(pre, full, room, strict=True)]
    # labels that the middle cut made equal while the names differ: keep the scope whole
    seen_full: dict[str, set[str]] = {}
    for b, f in zip(base, full, strict=True):
        seen_full.setdefault(b, set()).add(f)
    base = [
        x + _head_cut(f, r) if len(seen_full[b]) > 1 else b
        for b, x, f, r in zip(base, pre, full, room, strict=True)
    ]
    counts: dict[str, int] = {}
    for b in base:
        counts[b] = counts.get(b, 0) + 1
    seen: dict[str, int] = {}
    taken = set(base)
    out: list[str] = []
    for b in base:
        if counts[b] == 1:
            out.append(b)
            continue
        seen[b] = seen.get(b, 0) + 1
        if seen[b] == 1:
            out.append(b)
            continue
        n = seen[b]
        while True:
            suffix = f" ({n})"
            label = _middle_cut(b, width - len(suffix)) + suffix
            if label not in taken:
                break
            n += 1
        taken.add(label)
        out.append(label)
    return out


def graph_labels(graph: Graph, width: int = LABEL_WIDTH) -> dict[tuple[str, int], str]:
    """(subgraph, node index) -> label, for the main graph and every subgraph.

    Labels are unique over the whole model; a subgraph's layers carry its name
    (``body:add``) so a table that mixes them still tells them apart.
    """
    keys: list[tuple[str, int]] = []
    names: list[str] = []
    prefixes: list[str] = []
    for gname, g in graph.all_graphs():
        for node in g.nodes:
            keys.append((gname, node.index))
            names.append(node.name)
            prefixes.append("" if gname == graph.name else f"{gname}:")
    return dict(zip(keys, layer_labels(names, width, prefixes), strict=True))
