"""Latency forecast per layer on a target, and calibration of a target from measurements.

* :func:`estimate` -- per-layer forecast (:mod:`infercast.estimate.forecast`).
* :mod:`infercast.estimate.calibrate` -- fit a target's efficiencies and overheads.
* :mod:`infercast.estimate.validate` -- forecast vs measurement, with error metrics.
"""

from infercast.estimate.forecast import Forecast, LayerForecast, Params, estimate

__all__ = ["Forecast", "LayerForecast", "Params", "estimate"]
