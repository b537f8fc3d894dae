"""Every path under `results/{run}/`: the one place a file's location is written down.

Rules and library code both call these functions, so a path is spelled once. Each takes the
run directory (`run_dir("default")` = `results/default`) and the names that pick one file;
a name left out stays a Snakemake wildcard (`selection(root)` is
`results/x/selections/{variant}/selection.parquet`, `selection(root, "uniform")` one file).
docs/layout.md describes each path and is checked against `patterns()` by
tests/unit/test_layout.py.

The functions live in one module per stage (`_corpus`, `_labels`, `_training`, `_instruct`,
`_mates`, `_outputs`; the shared wildcards and the registry in `_paths`) and are all imported
here, so callers write `layout.selection(root)` whatever module defines it. To add a path: write
one function in its stage's module, decorated with `@path`, whose wildcard arguments default to
`"{name}"`; import it here; then add its row to docs/layout.md (the test says what is missing).
Directories the rules declare with `directory()` are paths like files (no trailing slash).
"""

from __future__ import annotations

from selectlab.layout._corpus import (  # noqa: F401
    annotation_batch_stats,
    annotation_stats,
    attributes_dir,
    corpus_build_stats,
    dsir_target,
    family_throughput,
    ground_truth,
    heldout,
    meta_sidecar,
    pool_report,
    quarantine,
    raw_shard,
    read_report,
    shard_read_report,
    sidecar,
    tokenizer,
    tokens,
    tokens_dir,
)
from selectlab.layout._instruct import (  # noqa: F401
    answer_judge_cache,
    answer_judge_summary,
    answer_judgments,
    answers,
    answers_metrics,
    instruct_eval,
    instruct_split,
    instruct_train,
    sft_checkpoints,
    sft_log,
    sft_model,
)
from selectlab.layout._labels import (  # noqa: F401
    analysis_matrix,
    analysis_sample,
    analysis_sample_summary,
    dsir_model,
    judge_cache,
    judge_labels,
    judge_sample,
    judge_summary,
    judgments,
    rater_card,
    rater_dir,
    rater_metrics,
    rater_model,
    reference_lm,
)
from selectlab.layout._mates import (  # noqa: F401
    influence_model,
    influence_model_card,
    influence_model_dir,
    mates_fit_metrics,
    mates_probe_metrics,
    mates_probes,
    mates_stage_dir,
)
from selectlab.layout._outputs import (  # noqa: F401
    archive,
    benchmark,
    caption,
    container_build_log,
    cost_plan,
    environment,
    figure,
    html_report,
    job_log,
    log,
    paper_cells,
    provenance,
    table,
)
from selectlab.layout._paths import (  # noqa: F401
    CAPTIONS,
    CHECKPOINT_META,
    CHECKPOINT_OWNER,
    CHECKPOINT_PREFIX,
    CHECKPOINT_STEP_DIGITS,
    COMPARISON,
    ENV,
    EXT,
    FAMILY,
    FRACTION,
    NAME,
    PART,
    PROTOCOL,
    PROXIES,
    RATER,
    RATER_CARD,
    RATER_MODEL,
    RESULTS,
    SEARCH,
    SHARD,
    SNAPSHOTS,
    SPLIT,
    STAGE,
    VARIANT,
    path,
    patterns,
    run_dir,
)
from selectlab.layout._training import (  # noqa: F401
    checkpoint,
    checkpoint_meta,
    checkpoint_name,
    checkpoint_owner,
    checkpoints,
    curve_icl,
    curve_icl_cache,
    final_model,
    icl,
    icl_cache,
    icl_tasks,
    lm_eval_data,
    metarater_weights,
    packed,
    perplexity,
    perplexity_progress,
    rank_dir,
    rank_sidecar,
    rank_summary,
    selection,
    selection_manifest,
    snapshot,
    snapshot_name,
    train_log,
)
