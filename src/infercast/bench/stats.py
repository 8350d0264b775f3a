"""Summary statistics of latency samples.

The confidence interval of the median is distribution-free: the *binomial
order-statistic* method. For ``n`` independent samples, the number of samples
below the true median is Binomial(n, 1/2); the interval ``[x_(l), x_(n-l+1)]``
(1-based order statistics) covers the median with probability
``1 - 2 * P(B <= l - 1)``. We take the largest ``l`` whose coverage is still at
least the requested level (95% by default). Below 6 samples no 95% interval
exists; the whole range is returned with its (lower) coverage stated.
Reference: W. J. Conover, *Practical Nonparametric Statistics*, 3rd ed., §3.2.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Summary:
    """Statistics of ``n`` per-inference latencies, all in seconds."""

    n: int
    median_s: float
    mean_s: float
    std_s: float
    min_s: float
    max_s: float
    p90_s: float
    p99_s: float
    ci_low_s: float
    ci_high_s: float
    ci_coverage: float
    """Actual coverage of ``[ci_low_s, ci_high_s]`` (>= the requested level when n >= 6)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def ci_half_width_rel(self) -> float:
        """Half the CI width as a fraction of the median (a precision figure)."""
        if self.median_s <= 0:
            return 0.0
        return (self.ci_high_s - self.ci_low_s) / 2 / self.median_s


def median_ci_ranks(n: int, level: float = 0.95) -> tuple[int, int, float]:
    """1-based ranks ``(l, u)`` of the order statistics bounding the median, and coverage."""
    if n <= 0:
        raise ValueError("no samples")
    k = np.arange(n + 1)
    log_pmf = np.array(
        [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) for i in k]
    ) - n * math.log(2.0)
    cdf = np.cumsum(np.exp(log_pmf))
    alpha = 1.0 - level
    best = 1
    for lo in range(1, n // 2 + 1):
        if 2.0 * cdf[lo - 1] <= alpha:
            best = lo
        else:
            break
    coverage = 1.0 - 2.0 * float(cdf[best - 1])
    return best, n - best + 1, max(coverage, 0.0)


def summarize(samples_s: Sequence[float] | np.ndarray[Any, Any], level: float = 0.95) -> Summary:
    """Median, mean, p90, p99, standard deviation and the median's CI of ``samples_s``."""
    x = np.sort(np.asarray(samples_s, dtype=np.float64))
    n = int(x.size)
    if n == 0:
        raise ValueError("no samples")
    lo, hi, cov = median_ci_ranks(n, level)
    return Summary(
        n=n,
        median_s=float(np.median(x)),
        mean_s=float(x.mean()),
        std_s=float(x.std(ddof=1)) if n > 1 else 0.0,
        min_s=float(x[0]),
        max_s=float(x[-1]),
        p90_s=float(np.percentile(x, 90)),
        p99_s=float(np.percentile(x, 99)),
        ci_low_s=float(x[lo - 1]),
        ci_high_s=float(x[hi - 1]),
        ci_coverage=round(cov, 6),
    )
