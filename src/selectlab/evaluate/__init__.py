"""Evaluation of trained models: per-source held-out perplexity and in-context learning.

Submodules import torch, transformers and lm-eval lazily, so importing this package is cheap.
"""
