"""The whole workflow on the tests-only config, run once, and every check of it.

The `run_dir` fixture (tests/e2e/conftest.py) runs `snakemake` on `.test/config.yaml` (results
under results/test/) once for this module. The checks live in three modules by theme and are
collected here, so that they share that one run (pytest-xdist schedules whole files, --dist
loadfile). tests/e2e/conftest.py runs them in source order, the reruns, which move and replace
the run's files, last:

- tests/e2e/outputs.py: what every stage wrote;
- tests/e2e/records.py: read report, judge failures, MATES stages, FLOPs and hours;
- tests/e2e/reruns.py: archive rebuilds, incremental reruns, a second run from scratch.
"""

from __future__ import annotations

import pytest

from tests.e2e.outputs import (  # noqa: F401 (collected here)
    test_every_stage_wrote_its_files,
    test_fine_tuning_beats_the_same_model_untuned,
    test_instruction_set_stays_off_the_corpus,
    test_papers_tables_comparison_and_claims,
    test_qurating_rows_select_sequence_units_of_their_own_pool,
    test_report_renders_every_table_and_figure_in_a_browser,
    test_selections_hit_budget_and_keep_source_proportions,
    test_tables_have_one_row_per_variant_with_finite_numbers,
    test_trained_models_beat_a_random_init_model_on_heldout_text,
    test_training_loss_falls,
    test_win_rates_are_real_numbers_from_both_orders,
)
from tests.e2e.records import (  # noqa: F401 (collected here)
    test_cost_tables_count_every_model_stage_with_the_flops_of_each_job,
    test_mates_sees_the_planted_damage_and_selects_less_of_it_than_uniform,
    test_mates_stages_select_disjoint_shares_and_the_later_one_by_predicted_influence,
    test_read_report_counts_every_line,
    test_report_and_archive_state_judge_failures_and_corpus_inputs,
)
from tests.e2e.reruns import (  # noqa: F401 (collected here)
    test_a_changed_raw_shard_reruns_its_tokenisation_and_every_family_of_its_annotation,
    test_a_second_run_from_scratch_selects_the_same_documents_and_archives_the_same_bytes,
    test_archive_manifest_matches_its_files,
    test_changing_one_variant_reruns_only_what_depends_on_it,
    test_rebuilding_the_report_and_archive_reproduces_the_checksums,
)

pytestmark = pytest.mark.e2e
