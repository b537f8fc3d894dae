"""Which checkpoints make a run's final model, and their element-wise mean (DataMan's merge).

DataMan (Appendix C, training details) saves "a checkpoint every 1,000 steps and merge[s] the
last three using mergekit": a linear merge with equal weights, i.e. the element-wise mean of
the three checkpoints' parameters. QuRating and Meta-rater report no merge: their model is the
final weights. The setting is `average_last` of the training settings, resolved per variant
family (`pretrain_by_family`, selectlab.train.resolve.resolve_pretrain): 1 = the final weights,
n > 1 = the mean of the last n *regular* checkpoints, those at multiples of `checkpoint_every`.
A run whose length is not a multiple of `checkpoint_every` (30B tokens in batches of 2,048 x 1,024
tokens is 14,305 steps) merges 12,000, 13,000 and 14,000: the steps after the last regular
checkpoint are not in the merge, as in the paper's recipe.

Nothing here knows how checkpoints are stored: `merged_steps` names the steps and
`checkpoints_to_keep` how many checkpoints pruning must leave; the training loop
(selectlab.train.loop) averages those checkpoints (selectlab.train.checkpoints), reading one at
a time, so that only a running sum and one checkpoint are in memory however many are merged.
"""

from __future__ import annotations


def merged_steps(total_steps: int, checkpoint_every: int, average_last: int) -> list[int]:
    """The steps whose weights form the final model, oldest first.

    A run too short to hold `average_last` regular checkpoints merges the ones it has, and one
    shorter than `checkpoint_every` keeps its final weights."""
    if total_steps < 1 or checkpoint_every < 1 or average_last < 1:
        raise ValueError(f"need positive steps, interval and count; got {total_steps}, "
                         f"{checkpoint_every}, {average_last}")
    if average_last == 1:
        return [total_steps]
    last_regular = total_steps - total_steps % checkpoint_every
    regular = list(range(checkpoint_every, last_regular + 1, checkpoint_every))
    return regular[-average_last:] or [total_steps]


def checkpoints_to_keep(total_steps: int, checkpoint_every: int, average_last: int) -> int:
    """How many of the newest checkpoints a run must keep on disk so that the merged ones are
    among them (the final, irregular checkpoint is kept too, for resuming)."""
    steps = merged_steps(total_steps, checkpoint_every, average_last)
    return len(steps) + (0 if steps[-1] == total_steps else 1)
