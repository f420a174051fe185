"""devlint: find and fix device-specific PyTorch code."""

__version__ = "0.1.0"
