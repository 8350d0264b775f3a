"""Analyses over the IR: compute cost (``cost``), memory (``memory``)."""
