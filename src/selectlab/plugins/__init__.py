"""Your own score family or selection method, beside the papers' rows (docs/your_method.md).

A **score family** turns a batch of texts into numeric columns, one value per text:

    @score_family(columns=["lexical_density"])
    def lexical(texts):
        return {"lexical_density": [...]}

It is configured as `annotate.families.<name>: {module: my_scores.py}` and annotated per shard
into `attributes/<name>/` like the built-in families (the RedPajama signals family is one:
`selectlab.annotate.signals.redpajama_signals`). A class works too: `columns` on the class,
`__init__(**options)` (plus `device`, when it asks for it), an optional `setup()` that loads
models, and `__call__(texts)`.

A **selection method** turns the pool's scores into one priority per unit; the harness takes
the highest priorities under the same budget, strata and training order as every other row:

    @selection_method()
    def my_rule(units, tau=2.0):
        return units.scores["my_scores.lexical_density"] / tau + units.gumbel()

It is configured as `selection.methods.<name>: {module: my_select.py}` and used by a variant's
`method: <name>`; the built-in top-k, score-level and DSIR methods are written this way
(`selectlab.selection.rules`).

`module` is a .py file (relative to the config file that names it) or a dotted import path;
`function` names the object (default: the module's one decorated object); `entry_point` names
a Python entry point of the `selectlab.score_families` or `selectlab.selection_methods` group
instead. Everything is checked before any job runs (`selectlab.plugins.checks`).
"""

from __future__ import annotations

from selectlab.plugins.families import score_family
from selectlab.plugins.loading import PluginError
from selectlab.plugins.methods import Units, selection_method

__all__ = ["PluginError", "Units", "score_family", "selection_method"]
