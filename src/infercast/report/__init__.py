"""Renderers: the only code that formats results for people or tools."""
