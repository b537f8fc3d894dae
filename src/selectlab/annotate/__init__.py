"""Per-shard annotation: one sidecar of scores per rater family, aligned row for row with the
shard's `meta` sidecar (`attributes/{family}/{shard}.parquet`).

A family is an `Annotator` built by the factory registered under its kind in
`selectlab.annotate.registry.FAMILIES`; `runner.annotate_shard` streams a shard through any of
them. Adding a rater family adds one registry entry and never a workflow rule.
"""
