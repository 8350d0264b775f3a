"""The package version, importable from every layer (``infercast.__version__``)."""

__version__ = "0.1.0"
