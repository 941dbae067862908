"""Symbolic execution at symbolic sizes and the independent specifications it is compared with."""
