"""The three papers' own evaluation protocols, tables, published numbers and claims.

`protocols` reads each paper's named evaluation protocol from the config (tasks, shots, metric,
groups, average) and says which (task, shots) settings every variant needs; `scores` turns one
model's `icl.json` into a paper's task, group and average scores; `estimates` summarises
replicates; `cells` and `tables` build the per-paper tables; `published` compares them with the
papers' numbers in config/published/; `claims` judges the claims ledger.
"""
