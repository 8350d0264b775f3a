"""What a variant is: the changes to apply to a model, and how the CLI's lists become variants.

A :class:`VariantSpec` names each axis of the design space; ``None`` on an axis
means "as in the model". The product of the CLI's lists is :func:`grid`.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from infercast.errors import InfercastError

DTypeName = Literal["int8", "fp16", "fp32"]
QuantScheme = Literal["per-tensor", "per-channel"]
DTYPES: tuple[DTypeName, ...] = ("int8", "fp16", "fp32")
QUANT_SCHEMES: tuple[QuantScheme, ...] = ("per-tensor", "per-channel")

DEFAULT_DIVISOR = 8
"""Channel counts of a width variant are rounded to a multiple of this, as the
MobileNets do (``_make_divisible(v, 8)``)."""


class VariantError(InfercastError):
    """A variant cannot be made (a bad option, or a model the transform cannot handle)."""


@dataclass(frozen=True)
class Replacement:
    """``--replace`` ``SRC=DST``: every ``SRC`` op becomes ``DST`` (an activation for
    another), or ``SRC:KxK=KxK`` (a kernel size for another, output size kept)."""

    src: str
    dst: str
    src_kernel: tuple[int, int] | None = None
    dst_kernel: tuple[int, int] | None = None

    def __str__(self) -> str:
        s = self.src + (f":{_kernel_str(self.src_kernel)}" if self.src_kernel else "")
        if self.dst_kernel and self.dst == self.src:
            return f"{s}={_kernel_str(self.dst_kernel)}"
        d = self.dst + (f":{_kernel_str(self.dst_kernel)}" if self.dst_kernel else "")
        return f"{s}={d}"


def _kernel_str(k: tuple[int, int]) -> str:
    return f"{k[0]}x{k[1]}"


@dataclass(frozen=True)
class VariantSpec:
    """One point of the design space.

    * ``resolution``: the image input's (height, width); None keeps the model's;
    * ``width``: multiplier of conv / FC output channels (1.0 keeps them);
    * ``dtype`` / ``quant``: weights and activations re-typed; quantisation scheme
      of int8 weights (None keeps the model's);
    * ``replace``: op or kernel replacements;
    * ``keep``: layers (names or name components) whose channel counts a width
      change leaves alone, besides the model's output classes;
    * ``divisor``: channel counts are rounded to a multiple of it;
    * ``threads``: CPU threads the forecast assumes (None: all the unit's cores);
    * ``channels``: explicit output channel counts of named layers (what ``advise``
      tries for a channel count just above a vector width).
    """

    resolution: tuple[int, int] | None = None
    width: float = 1.0
    dtype: DTypeName | None = None
    quant: QuantScheme | None = None
    replace: tuple[Replacement, ...] = ()
    keep: tuple[str, ...] = ()
    divisor: int = DEFAULT_DIVISOR
    threads: int | None = None
    channels: tuple[tuple[str, int], ...] = field(default=())

    @property
    def is_identity(self) -> bool:
        return (
            self.resolution is None
            and self.width == 1.0
            and self.dtype is None
            and self.quant is None
            and not self.replace
            and not self.channels
        )

    def label(self) -> str:
        parts = []
        if self.resolution is not None:
            h, w = self.resolution
            parts.append(f"r{h}" if h == w else f"r{h}x{w}")
        if self.width != 1.0:
            parts.append(f"w{self.width:g}")
        if self.dtype is not None:
            parts.append(self.dtype)
        if self.quant is not None:
            parts.append(self.quant)
        for r in self.replace:
            parts.append(str(r).replace("=", "-").replace(":", "_"))
        for name, c in self.channels:
            parts.append(f"{name.rsplit('/', 1)[-1]}-{c}")
        if self.threads is not None:
            parts.append(f"t{self.threads}")
        return "_".join(parts) or "base"

    def with_(self, **changes: object) -> VariantSpec:
        return replace(self, **changes)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- #
# Parsing the CLI's lists
# --------------------------------------------------------------------------- #


def _split(values: Sequence[str] | None) -> list[str]:
    out: list[str] = []
    for v in values or ():
        out.extend(p.strip() for p in v.split(",") if p.strip())
    return out


def parse_resolutions(values: Sequence[str] | None) -> list[tuple[int, int]]:
    """``128,160`` or ``96x128`` (height x width), several allowed."""
    out = []
    for p in _split(values):
        m = re.fullmatch(r"(\d+)(?:[xX](\d+))?", p)
        if not m:
            raise VariantError(
                f"--resolution '{p}' is not a size", "give N (square) or HxW, e.g. 160,192x256"
            )
        h = int(m.group(1))
        w = int(m.group(2)) if m.group(2) else h
        if h < 1 or w < 1:
            raise VariantError(f"--resolution '{p}' must be positive")
        out.append((h, w))
    return out


def parse_widths(values: Sequence[str] | None) -> list[float]:
    out = []
    for p in _split(values):
        try:
            w = float(p)
        except ValueError:
            raise VariantError(
                f"--width '{p}' is not a number", "e.g. --width 0.5,0.75,1.0"
            ) from None
        if not 0.0 < w <= 4.0:
            raise VariantError(f"--width {p} is out of range", "give a multiplier in (0, 4]")
        out.append(w)
    return out


def parse_dtypes(values: Sequence[str] | None) -> list[DTypeName]:
    out: list[DTypeName] = []
    for p in _split(values):
        key = p.lower()
        match = next((d for d in DTYPES if d == key), None)
        if match is None:
            raise VariantError(f"--dtype '{p}' is not one of {', '.join(DTYPES)}")
        out.append(match)
    return out


def parse_quant(value: str | None) -> QuantScheme | None:
    if value is None:
        return None
    key = value.lower().replace("_", "-")
    match = next((q for q in QUANT_SCHEMES if q == key), None)
    if match is None:
        raise VariantError(f"--quant '{value}' is not one of {', '.join(QUANT_SCHEMES)}")
    return match


_KERNEL = re.compile(r"(\d+)[xX](\d+)")


def _op_kernel(text: str, option: str) -> tuple[str, tuple[int, int] | None]:
    name, sep, kernel = text.partition(":")
    k = None
    if sep:
        m = _KERNEL.fullmatch(kernel.strip())
        if not m:
            raise VariantError(f"{option} '{text}': kernel must be KxK, e.g. 5x5")
        k = (int(m.group(1)), int(m.group(2)))
    elif _KERNEL.fullmatch(name.strip()):  # "5x5" alone: a kernel of the same op
        m = _KERNEL.fullmatch(name.strip())
        assert m is not None
        return "", (int(m.group(1)), int(m.group(2)))
    return name.strip(), k


def parse_replacements(values: Sequence[str] | None) -> list[Replacement]:
    """``HARD_SWISH=RELU6``, ``DEPTHWISE_CONV_2D:5x5=3x3`` (each option one replacement;
    several options all apply to one variant)."""
    out = []
    for v in values or ():
        text = v.strip()
        src, sep, dst = text.partition("=")
        if not sep or not src.strip() or not dst.strip():
            raise VariantError(
                f"--replace '{text}' is not SRC=DST",
                "e.g. --replace HARD_SWISH=RELU6 or --replace DEPTHWISE_CONV_2D:5x5=3x3",
            )
        s_op, s_k = _op_kernel(src, "--replace")
        d_op, d_k = _op_kernel(dst, "--replace")
        if not s_op:
            raise VariantError(f"--replace '{text}': name the op to replace before the ':'")
        if (s_k is None) != (d_k is None):
            raise VariantError(
                f"--replace '{text}': give a kernel on both sides or on neither",
                "e.g. DEPTHWISE_CONV_2D:5x5=3x3",
            )
        if s_k is not None and d_k is not None:
            if any(k < 1 or k % 2 == 0 for k in (*s_k, *d_k)):
                raise VariantError(f"--replace '{text}': kernel sizes must be odd")
            if any(d > s for d, s in zip(d_k, s_k, strict=True)):
                raise VariantError(
                    f"--replace '{text}': the new kernel must not be larger than the old"
                )
        out.append(Replacement(s_op, d_op or s_op, s_k, d_k))
    return out


def parse_threads(values: Sequence[str] | None) -> list[int]:
    out = []
    for p in _split(values):
        try:
            n = int(p)
        except ValueError:
            raise VariantError(f"--threads '{p}' is not a whole number") from None
        if n < 1:
            raise VariantError(f"--threads {n} must be at least 1")
        out.append(n)
    return out


def grid(
    resolutions: Sequence[tuple[int, int] | None] = (None,),
    widths: Sequence[float] = (1.0,),
    dtypes: Sequence[DTypeName | None] = (None,),
    threads: Sequence[int | None] = (None,),
    *,
    quant: QuantScheme | None = None,
    replace: Sequence[Replacement] = (),
    keep: Sequence[str] = (),
    divisor: int = DEFAULT_DIVISOR,
) -> list[VariantSpec]:
    """The product of the axes' lists (an empty list means "as in the model")."""
    if divisor < 1:
        raise VariantError(f"--divisor {divisor} must be at least 1")
    out = []
    for r, w, d, t in itertools.product(
        list(resolutions) or [None],
        list(widths) or [1.0],
        list(dtypes) or [None],
        list(threads) or [None],
    ):
        out.append(
            VariantSpec(
                resolution=r,
                width=w,
                dtype=d,
                quant=quant,
                replace=tuple(replace),
                keep=tuple(keep),
                divisor=divisor,
                threads=t,
            )
        )
    return out
