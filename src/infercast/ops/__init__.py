"""Per-op cost rules, registered by canonical op name (see :mod:`infercast.ops.registry`)."""
