"""The package version, in one place (pyproject reads it; ``attnsim --version`` prints it)."""

__version__ = "0.1.0"
