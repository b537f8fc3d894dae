"""selectlab: one harness for reproducing pre-training data selection papers."""

__version__ = "0.1.0"
