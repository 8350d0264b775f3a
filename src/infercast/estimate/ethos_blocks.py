"""Arm Ethos-U block configuration: the OFM block each NPU operation is cut into.

The Ethos-U computes an operation one OFM block at a time and fetches, per block, the IFM
area that block needs (its halo included) through the whole IFM depth. The block therefore
sets how often a feature map is read again. This module re-implements, in our own code,
the search Arm's Vela compiler runs to pick that block, and the IFM reads Vela charges for
it, so a forecast follows Vela's choice per layer:

- :func:`find_block` follows ``ArchEthosU55::FindBlockConfig`` / ``TryBlockConfig`` /
  ``ChooseKernelMethod`` / ``GetArchIFMBlockSize`` / ``FitBlockForOFM`` (ethos-u-vela 5.2.0,
  ``regor/architecture/ethosu55/ethos_u55.cpp``; the Ethos-U65 reuses them with the
  256-MAC table of ``ethosu65/ethos_u65.cpp``): every block of OFM micro-blocks up to
  32 x 64 x 128 (H x W x C) whose IFM and accumulator buffers fit the SHRAM banks, costed as
  (IFM + weight elements fetched) per OFM element, the lowest cost kept. The cost is
  computed in single precision as Vela does, since equal costs are broken by order.
- :func:`ifm_read_elements` follows ``EthosU55Performance::MeasureElementAccess``
  (``ethos_u55_performance.cpp``): IFM elements read = IFM block area x IFM depth
  x sub-kernels x OFM blocks (depth blocks included for a convolution).

Only the int8, unscaled-IFM, no-LUT, single-core case is modelled (what an int8 TFLite
model's convolutions, depthwise convolutions and pools ask for).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

_F = np.float32


@dataclass(frozen=True)
class AccelConfig:
    """One row of Vela's ``AcceleratorConfig`` table (``ethos_u55.cpp`` / ``ethos_u65.cpp``)."""

    macs: int
    ofm_ublock: tuple[int, int, int]  # H, W, C
    ifm_ublock: tuple[int, int, int]
    shram_banks: int
    granule_ifm8: int
    granule_acc32: int


ACCEL_CONFIGS: dict[str, AccelConfig] = {
    # ethos_u55.cpp s_EthosU55Configs: Ethos_U55_128 {128, 1, Shape(1,2,8), Shape(1,2,8), 24,
    # {4,4,4,4,8,4,8,12}, ...}; Ethos_U55_256 and ethos_u65.cpp s_EthosU65Configs (256, one
    # core) {256, 1, Shape(2,2,8), Shape(2,2,8), 48, {8,8,8,8,16,8,16,20}, ...}. The granule
    # order is IFM8, IFM16, IFM8_Elementwise, IFM16_Elementwise, IFM32, Acc16, Acc32, Acc40.
    "ethos-u55-128": AccelConfig(128, (1, 2, 8), (1, 2, 8), 24, 4, 8),
    "ethos-u55-256": AccelConfig(256, (2, 2, 8), (2, 2, 8), 48, 8, 16),
    "ethos-u65-256": AccelConfig(256, (2, 2, 8), (2, 2, 8), 48, 8, 16),
}

_OFM_BLOCK_MAX = (32, 64, 128)  # ArchEthosU55() _ofmBlockMax(32, 64, 128): H, W, C
_SUBKERNEL_MAX = 8  # _subkernelMax(8, 8, 65536)
_OFM_SPLIT_DEPTH = 16  # FindBlockConfig OFMSplitDepth
_BANK_BYTES = 1024  # _shram.bankSizeBytes
_RESERVED_OUTPUT_BANKS = 2  # _shram.reservedOutputBanks

KINDS = ("conv", "depthwise", "pool")


@dataclass(frozen=True)
class Block:
    """The OFM block Vela picks, and the IFM block that feeds it (H, W, C each)."""

    ofm: tuple[int, int, int]
    ifm: tuple[int, int, int]


def _ceil_to(n: int, m: int) -> int:
    return -(-n // m) * m


def _div_up(n: int, m: int) -> int:
    return -(-n // m)


def _part_kernel(ifm_depth: int, kernel_elements: int) -> bool:
    """``ChooseKernelMethod``: part-kernel-first traversal when it uses the MACs better."""
    if ifm_depth <= 8:
        return True
    depth_util = ifm_depth / _ceil_to(ifm_depth, 32)
    part_util = (ifm_depth / _ceil_to(ifm_depth, 8)) * (
        kernel_elements / _ceil_to(kernel_elements, 4)
    )
    return part_util >= depth_util


def _ifm_extent(ofm: int, stride: int, dilated: int, ublock: int) -> int:
    """``GetArchIFMBlockSize`` along one axis (no upscaling): ``RequiredInputSize`` rounded
    up to the OFM micro-block."""
    return _ceil_to((ofm - 1) * stride + min(dilated, _SUBKERNEL_MAX), ublock)


def _fits(cfg: AccelConfig, ofm: tuple[int, int, int], ifm: tuple[int, int, int]) -> bool:
    """``TryBlockConfig`` for a non-elementwise int8 op with 32-bit accumulators."""
    ifm_bytes = ifm[0] * ifm[1] * _ceil_to(ifm[2], 8)
    ifm_banks = _ceil_to(_div_up(ifm_bytes, _BANK_BYTES) * 2, cfg.granule_ifm8)
    lut_banks = 2 if cfg.shram_banks > 16 else 0  # reservedEndBanks; no LUT
    acc_bytes = ofm[0] * ofm[1] * _ceil_to(ofm[2], 8) * 32 // 8
    acc_banks = _ceil_to(_div_up(acc_bytes, _BANK_BYTES) * 2, cfg.granule_acc32)
    acc_start = cfg.shram_banks - lut_banks - acc_banks
    return _RESERVED_OUTPUT_BANKS + ifm_banks <= acc_start


def _candidates(cfg: AccelConfig, ofm: tuple[int, int, int]) -> Iterator[tuple[int, int, int]]:
    """The OFM blocks (height, width, depth) Vela's block searches try, in its order: depth
    from the first split depth up in micro-block steps (rounded to the split depth while
    below the OFM's), height and width in micro-block steps up to the OFM rounded to them."""
    uh, uw, ud = cfg.ofm_ublock
    space = tuple(
        _ceil_to(min(o, m), u) for o, m, u in zip(ofm, _OFM_BLOCK_MAX, cfg.ofm_ublock, strict=True)
    )
    depth = max(ud, min(space[2], _OFM_SPLIT_DEPTH))
    if depth < ofm[2]:
        depth = _ceil_to(depth, _OFM_SPLIT_DEPTH)
    while depth <= space[2]:
        for height in range(uh, space[0] + 1, uh):
            for width in range(uw, space[1] + 1, uw):
                yield height, width, depth
        depth += ud
        if depth < ofm[2]:
            depth = _ceil_to(depth, _OFM_SPLIT_DEPTH)


class _Best:
    """The block Vela keeps: the lowest cost; on a tie, a block of at most 4 x 4 whose cover
    of the whole (the area over the part one block covers) is no worse."""

    def __init__(self) -> None:
        self.cost = _F(np.inf)
        self.cover = _F(np.inf)
        self.block: Block | None = None

    def offer(self, cost: Any, whole: tuple[int, int], part: tuple[int, int], block: Block) -> None:
        if cost > self.cost:
            return
        if cost == self.cost:
            cover = _F(whole[0] * whole[1]) / _F(
                max(min(whole[0], part[0]) * min(whole[1], part[1]), 1)
            )
            if not (cover <= self.cover and block.ofm[0] <= 4 and block.ofm[1] <= 4):
                return
            self.cover = cover
        else:
            self.cover = _F(np.inf)
        self.cost = cost
        self.block = block


@lru_cache(maxsize=4096)
def find_block(
    accel: str,
    kind: str,
    ifm: tuple[int, int, int],
    ofm: tuple[int, int, int],
    kernel: tuple[int, int],
    stride: tuple[int, int] = (1, 1),
    dilation: tuple[int, int] = (1, 1),
) -> Block | None:
    """The OFM block Vela's ``FindBlockConfig`` picks for an int8 ``kind`` op (``conv``, a
    convolution or fully-connected layer; ``depthwise``; ``pool``) with these IFM / OFM
    shapes (H, W, C) and kernel (H, W); None when no block fits."""
    cfg = ACCEL_CONFIGS[accel]
    uh, uw, _ = cfg.ofm_ublock
    equal_depth = kind in ("depthwise", "pool")
    kh, kw = kernel
    sy, sx = stride
    dkh, dkw = (kh - 1) * dilation[0] + 1, (kw - 1) * dilation[1] + 1
    part = kind == "conv" and _part_kernel(ifm[2], kh * kw)
    ifm_repeats = _div_up(dkw, _SUBKERNEL_MAX) * _div_up(dkh, _SUBKERNEL_MAX)
    ifm_block_depth = _ceil_to(min(ifm[2], 16 if part else 32), cfg.ifm_ublock[2])
    weight_wh = kh * kw if kind != "pool" else 0
    ofm_elements = ofm[0] * ofm[1] * ofm[2]
    ifm_elements = ifm[0] * ifm[1] * ifm[2]
    oh, ow, od = (_F(v) for v in ofm)
    best = _Best()
    wont_fit: set[tuple[int, int]] = set()
    for height, width, depth in _candidates(cfg, ofm):
        if (height, width) in wont_fit:
            continue
        ih = _ifm_extent(height, sy, dkh, uh)
        iw = _ifm_extent(width, sx, dkw, uw)
        ib = (ih, iw, depth if equal_depth else ifm_block_depth)
        # FitBlockForOFM: the 256/512-MAC Conv1D case
        fh = min(height, ofm[0]) if (ofm[0] == 1 and kh == 1 and uh == 2) else height
        if not _fits(cfg, (fh, width, depth), ib):
            wont_fit.add((height, width))
            continue
        full_wh = _div_up(ofm[0], fh) * _div_up(ofm[1], width)
        bx, by, bz = ow / _F(width), oh / _F(fh), od / _F(depth)
        weight_fetch = _F(weight_wh * ifm[2] * full_wh)
        if not equal_depth:
            weight_fetch = weight_fetch * (bz * _F(depth))
        ifm_fetch = _F(ih * iw * ifm[2] * ifm_repeats) * bx * by
        if not equal_depth:
            ifm_fetch = ifm_fetch * _F(_div_up(ofm[2], depth))
        cost = (ifm_fetch + weight_fetch) / _F(ofm_elements)
        if ifm_elements < ih * iw * ib[2] * 2:
            cost = cost / _F(2.0)
        best.offer(cost, (ifm[0], ifm[1]), (ih, iw), Block((height, width, depth), ib))
    return best.block


def ifm_read_elements(
    kind: str,
    block: Block,
    ifm: tuple[int, int, int],
    ofm: tuple[int, int, int],
    kernel: tuple[int, int],
    brick_depth: int = 16,
) -> int:
    """IFM elements Vela's ``MeasureElementAccess`` charges for an op cut into ``block``.

    ``brick_depth`` is the IFM's storage rounding in depth (16 for NHCWB16 feature maps,
    1 for an NHWC model input)."""
    ih, iw = min(ifm[0], block.ifm[0]), min(ifm[1], block.ifm[1])
    bh, bw, bd = (min(o, b) for o, b in zip(ofm, block.ofm, strict=True))
    count = _div_up(ofm[0], bh) * _div_up(ofm[1], bw)
    if kind == "conv":
        count *= _div_up(ofm[2], bd)
    subkernels = _div_up(kernel[1], _SUBKERNEL_MAX) * _div_up(kernel[0], _SUBKERNEL_MAX)
    return ih * iw * _ceil_to(ifm[2], brick_depth) * subkernels * count


# EthosU55PerfInfo rows (ethos_u55.cpp s_EthosU55PerfInfo, ethos_u65.cpp s_EthosU65PerfInfo):
# outputCycles[7] (the output cycles per element of a convolution, depthwise or average pool
# with 32-bit accumulators), outputCycles[6] (MaxPool), and activationCycles (LUT, ReLU, none).
_OUTPUT_CYCLES: dict[str, tuple[float, float]] = {
    "ethos-u55-128": (0.5, 0.25),
    "ethos-u55-256": (0.25, 0.125),
    "ethos-u65-256": (0.25, 0.125),
}
_ACTIVATION_CYCLES: dict[str, dict[str, float]] = {
    "ethos-u55-128": {"lut": 1.0, "relu": 0.5, "none": 0.0},
    "ethos-u55-256": {"lut": 1.0, "relu": 0.25, "none": 0.0},
    "ethos-u65-256": {"lut": 1.0, "relu": 0.25, "none": 0.0},
}


def mac_op_cycles(
    accel: str,
    kind: str,
    block: Block,
    ifm: tuple[int, int, int],
    ofm: tuple[int, int, int],
    kernel: tuple[int, int],
    activation: str = "none",
    max_pool: bool = False,
) -> int:
    """NPU cycles Vela's ``EstimateMacOpCycles`` (``ethos_u55_performance.cpp``) gives an
    int8 op cut into ``block``: per OFM block the larger of the MAC cycles
    (``EstimateMacCyclesPerBlock``: micro-blocks x kernel steps, at least the 32-cycle
    write-back per micro-block step, times the IFM depth blocks of a convolution) and the
    output-stage cycles (``EstimateAOCyclesPerElement`` x block elements), times the number
    of blocks. ``activation`` is ``relu``, ``lut`` (sigmoid, tanh, hard-swish and other
    table activations) or ``none``. The command-issue limit and the first / last block's
    memory latency are left out (small beside the blocks on the layers of whole models)."""
    cfg = ACCEL_CONFIGS[accel]
    uh, uw, ud = cfg.ofm_ublock
    if kind == "conv" and uh == 2 and ofm[0] == 1 and ofm[1] % 2 == 0 and kernel[0] == 1:
        uh, uw = 1, 4  # GetOfmMicroBlock's 1-row optimisation
    bh, bw, bd = (min(o, b) for o, b in zip(ofm, block.ofm, strict=True))
    nh, nw, nd = _div_up(bh, uh), _div_up(bw, uw), _div_up(bd, ud)
    n_wh = nh * nw
    ifm_bd = min(ifm[2], block.ifm[2])
    part = kind == "conv" and _part_kernel(ifm[2], kernel[0] * kernel[1])
    cycles_wb = 32 * ud // 8
    mac = 0
    for x in range(0, kernel[1], _SUBKERNEL_MAX):
        for y in range(0, kernel[0], _SUBKERNEL_MAX):
            sub = min(kernel[0] - y, _SUBKERNEL_MAX) * min(kernel[1] - x, _SUBKERNEL_MAX)
            if kind == "pool":
                steps = 1
                cycles = max(4, sub) * n_wh * nd * (8 // 2)
            elif kind == "depthwise":
                steps = _div_up(sub, 4)
                cycles = max(cycles_wb, 4 * n_wh) * steps * nd
            elif not part:
                steps = sub
                cycles = max(cycles_wb, 4 * n_wh) * steps * nd
            else:
                steps = _div_up(sub, 4)
                cycles = max(cycles_wb, 4 * n_wh) * steps * nd * _div_up(ifm_bd, 8)
            delay = 0
            if n_wh == 1:
                if nd == 1:
                    delay = 2 * steps
                elif steps > 1:
                    delay = 2 * (steps - 1) * nd
            if part:
                delay *= _div_up(ifm_bd, 8)
            mac += cycles + delay
    if kind == "conv":
        mac *= _div_up(ifm[2], ifm_bd)
    n_blocks = (_div_up(ofm[0], uh) * _div_up(ofm[1], uw) * _div_up(ofm[2], ud)) / (nh * nw * nd)
    out_cycles, max_pool_cycles = _OUTPUT_CYCLES[accel]
    per_elem = max(
        max_pool_cycles if max_pool else out_cycles, _ACTIVATION_CYCLES[accel][activation]
    )
    ao = float(np.ceil(per_elem * bh * bw * bd))
    if mac > ao:
        return int(mac * n_blocks)
    return int(ao * n_blocks + mac)


# IFM8_Elementwise SHRAM granule (the third entry of the granule tables quoted above).
_GRANULE_IFM8_EW: dict[str, int] = {"ethos-u55-128": 4, "ethos-u55-256": 8, "ethos-u65-256": 8}


@lru_cache(maxsize=4096)
def elementwise_block(accel: str, ofm: tuple[int, int, int], binary: bool = True) -> Block | None:
    """The OFM block Vela's ``FindBlockConfig`` picks for an int8 elementwise op (ethos-u-vela
    5.2.0 ``ethos_u55.cpp``: the IFM block equals the OFM block; ``TryBlockConfig`` leaves no
    accumulators and, for a binary op (``ElementwiseUsage::Full``), as many IFM2 banks as IFM
    banks; the cost is the number of blocks, the largest block volume wins, a tie kept only
    for a block of at most 4 x 4). Vela also runs a memory copy (a standalone PAD) this way."""
    cfg = ACCEL_CONFIGS.get(accel)
    if cfg is None or min(ofm) <= 0:
        return None
    granule = _GRANULE_IFM8_EW[accel]
    lut_banks = 2 if cfg.shram_banks > 16 else 0
    ofm_elements = _F(ofm[0] * ofm[1] * ofm[2])
    best = _Best()
    for height, width, depth in _candidates(cfg, ofm):
        ifm_bytes = height * width * _ceil_to(depth, 8)
        banks = _ceil_to(_div_up(ifm_bytes, _BANK_BYTES) * 2, granule)
        if _RESERVED_OUTPUT_BANKS + banks * (2 if binary else 1) > cfg.shram_banks - lut_banks:
            continue
        cost = ofm_elements / _F(height * width * depth)
        if ofm[0] * ofm[1] * ofm[2] < height * width * depth * 2:
            cost = cost / _F(2.0)
        block = (height, width, depth)
        best.offer(cost, (ofm[0], ofm[1]), (height, width), Block(block, block))
    return best.block


def memory_transfer_factor(
    is_read: bool,
    linear: bool,
    depth_bytes: int,
    width: int,
    block: Block,
    max_burst: int,
    nxp: bool = False,
) -> float:
    """Bytes Vela charges per byte of a feature-map transfer (ethos-u-vela 5.2.0
    ``ethos_u55_performance.cpp`` ``EstimateMemoryTransfer``, int8, one core): the transfer
    is issued in bursts and each burst charged the memory's maximum burst length. A linear
    (NHWC) map is read in bursts of one IFM block depth unless a pixel is exactly that deep
    (then whole block rows), and written in bursts of min(64, 16, OFM block depth) bytes
    unless the block is at most 16 deep and a pixel exactly that deep; a brick (NHCWB16)
    map is read in bursts of 16 x block width bytes and written likewise (unless a brick
    column is exactly one block deep). ``width`` is the map's width in pixels.

    ``nxp``: NXP's Vela 3.7 (nxp-imx/ethos-u-vela lf-6.1.22_2.0.0 ``npu_performance.py``
    ``_estimate_memory_transfer_efficiency``) tests a linear map's *element* stride (one
    byte for int8), not its pixel depth, against the block depth, so it never takes the
    whole-row burst: a linear read goes in bursts of one block depth and a linear write in
    16-byte bursts whatever the map's depth."""
    if max_burst <= 0:
        return 1.0
    _, bw, bd = block.ifm if is_read else block.ofm
    if linear and nxp:
        depth_bytes = 1
    if linear:
        if is_read:
            burst = bd * bw if depth_bytes == bd else bd
        else:
            burst = bd * bw if (bd <= 16 and depth_bytes == bd) else min(64, 16, bd)
    else:
        burst = bd * bw if width * 16 == bd else 16 * bw
    return max_burst / min(max_burst, max(burst, 1))
