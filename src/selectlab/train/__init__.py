"""Pretraining: Llama-style decoders from presets, a single training loop, checkpoint averaging."""
