"""MATES (Yu et al., 2024): staged pre-training with a data-influence model.

See selectlab.mates.plan for how a `mates` variant becomes jobs.
"""
