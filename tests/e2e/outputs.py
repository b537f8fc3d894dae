"""Checks of what every stage of the tests-only run wrote: real files with real contents.

Collected through tests/e2e/test_workflow.py, which runs the workflow once for all of them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from selectlab.plugins.rows import variant_label
from selectlab.selection import mates_stages
from selectlab.selection.pools import variant_pool
from selectlab.selection.resolve import resolve_selection
from tests.e2e.workflow_run import REPO
from tests.instruct_judging import judge_tuned_against_untuned
from tests.your_method import write_doc_files

# docs/your_method.md's two rows, as every table labels them.
YOUR_LABELS = ["Lexical density top-k (yours)", "Lexical density tau=2 (yours)"]


def test_every_stage_wrote_its_files(run_dir, config):
    variants = list(config["variants"])
    shards = [f"shard_{i:05d}" for i in range(config["corpus"]["num_shards"])]
    expected = [
        "corpus/ground_truth.parquet", "corpus/heldout/validation.jsonl.zst",
        "corpus/heldout/test.jsonl.zst", "tokenizer/tokenizer.json", "tables/read_report.csv",
        "tables/main.csv", "tables/main.md", "tables/perplexity_by_source.csv",
        "tables/icl_by_task.csv", "figures/ppl_vs_icl.png", "figures/loss_curves.png",
        "report/report.html", "provenance/provenance.json",
        f"archive/selectlab-{config['run']}.tar.gz",
    ]
    expected += ["instruct/data/train.parquet", "instruct/data/eval.parquet",
                 "instruct/data/split.json", "tables/winrate.csv", "tables/winrate.md",
                 "figures/winrate.png", "instruct/judgments/qurating/judgments.parquet"]
    expected += [f"corpus/tokens/{s}.npy" for s in shards]
    expected += [f"attributes/meta/{s}.parquet" for s in shards]
    for variant in variants:
        expected += [f"selections/{variant}/selection.parquet",
                     f"models/{variant}/final/model.safetensors",
                     f"models/{variant}/train_log.csv", f"eval/{variant}/perplexity.json",
                     f"eval/{variant}/icl.json"]
    expected += [f"tables/{name}.{ext}" for name in ("cost", "cost_variants",
                                                     "cost_metarater_table2")
                 for ext in ("csv", "md")]
    missing = [path for path in expected if not (run_dir / path).is_file()]
    assert not missing
    # The packed sequences are temporary: read by pretraining alone, removed once it is done.
    assert not list(run_dir.glob("selections/*/train.npy"))
    for png in ("figures/ppl_vs_icl.png", "figures/loss_curves.png"):
        assert (run_dir / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The raters' tables say where their labels came from.
    assert "SIMULATED judge" in (run_dir / "tables/rater_qurater.md").read_text()


def pool_meta(run_dir: Path, pool: str) -> pd.DataFrame:
    """Every unit of a selection pool (`full`: the tokenized shards' documents)."""
    pattern = "shard_?????.parquet" if pool == "full" else f"shard_?????__{pool}.parquet"
    return pd.concat(pd.read_parquet(p)
                     for p in sorted((run_dir / "attributes/meta").glob(pattern)))


def test_selections_hit_budget_and_keep_source_proportions(run_dir, config):
    for variant in config["variants"]:
        meta = pool_meta(run_dir, variant_pool(config, variant))
        pool_share = meta.groupby("set_name")["n_tokens"].sum() / meta["n_tokens"].sum()
        budget = resolve_selection(config, variant)["budget_tokens"]
        selection = pd.read_parquet(run_dir / f"selections/{variant}/selection.parquet")
        assert not selection["id"].duplicated().any()
        total = selection["n_tokens"].sum()
        # A MATES variant's stages each end within a document of their share.
        takes = mates_stages.mates_settings(config, variant)["stages"] \
            if variant in mates_stages.mates_variants(config) else 1
        assert budget <= total <= budget + takes * selection["n_tokens"].max()
        share = selection.groupby("set_name")["n_tokens"].sum() / total
        # Stated tolerance: every source within 2 percentage points of its pool share.
        assert (share - pool_share).abs().max() < 0.02, (share - pool_share)
        manifest = json.loads((run_dir / f"selections/{variant}/manifest.json").read_text())
        assert manifest["selected_tokens"] == total


def test_qurating_rows_select_sequence_units_of_their_own_pool(run_dir, config):
    """The QuRating row selects 128-token sequences (QuRatedPajama's 1024, scaled to the
    tests' context) of a fixed 60% subset; the other rows select whole documents."""
    pool = config["corpus"]["pools"]["qurating"]
    documents, units = pool_meta(run_dir, "full"), pool_meta(run_dir, "qurating")
    # Each source's stream (documents and their EOS) is cut into windows of the length; only
    # each source's last window of a shard is shorter.
    assert (units.groupby("set_name")["n_tokens"].max() == pool["sequence_tokens"]).all()
    short = units[units["n_tokens"] < pool["sequence_tokens"]]
    assert len(short) <= 2 * units["set_name"].nunique()
    stream = documents["n_tokens"].sum() + len(documents)
    assert abs(units["n_tokens"].sum() / stream - pool["share"]) < 0.05
    assert set(units["id"].str.split("#").str[0]) <= set(documents["id"])
    # The QuRater rated those units, row for row, and the row selected among them.
    for shard in ("shard_00000", "shard_00001"):
        rated = pd.read_parquet(run_dir / f"attributes/qurater/{shard}__qurating.parquet")
        meta = pd.read_parquet(run_dir / f"attributes/meta/{shard}__qurating.parquet")
        assert rated["id"].tolist() == meta["id"].tolist()
        assert rated["educational_value"].notna().all()
    selection = pd.read_parquet(run_dir / "selections/educational_value_t2/selection.parquet")
    assert set(selection["id"]) <= set(units["id"])
    assert selection["shard"].str.endswith("__qurating").all()
    for variant in config["variants"]:
        manifest = json.loads((run_dir / f"selections/{variant}/manifest.json").read_text())
        expected = ({"name": "qurating", "unit": "sequence", "sequence_tokens": 128,
                     "share": 0.6} if variant == "educational_value_t2" else
                    {"name": "full", "unit": "document", "sequence_tokens": None, "share": 1.0})
        assert manifest["pool"] == expected, variant


def test_training_loss_falls(run_dir, config):
    for variant in config["variants"]:
        log = pd.read_csv(run_dir / f"models/{variant}/train_log.csv")
        # At least half a nat below the start: far beyond step-to-step noise (~0.1).
        assert log["loss"].tail(5).mean() < log["loss"].head(5).mean() - 0.5


def test_trained_models_beat_a_random_init_model_on_heldout_text(run_dir, config):
    import torch
    from transformers import LlamaForCausalLM

    from selectlab.evaluate.perplexity import per_source_perplexity

    trained_dir = run_dir / "models" / next(iter(config["variants"])) / "final"
    random_dir = run_dir.parent / f".{config['run']}-random-init"
    torch.manual_seed(0)
    LlamaForCausalLM(LlamaForCausalLM.from_pretrained(trained_dir).config).save_pretrained(
        random_dir)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(trained_dir / name, random_dir / name)
    heldout = {"validation": run_dir / "corpus/heldout/validation.jsonl.zst"}
    random_ppl = per_source_perplexity(random_dir, heldout, seq_len=config["pretrain"]["seq_len"],
                                       batch_size=8, max_tokens_per_source=2000, device="cpu",
                                       dtype="float32")
    shutil.rmtree(random_dir)
    for variant in config["variants"]:
        trained = json.loads((run_dir / f"eval/{variant}/perplexity.json").read_text())
        assert trained["validation"]["all"]["ppl"] < 0.5 * random_ppl["validation"]["all"]["ppl"]


def test_tables_have_one_row_per_variant_with_finite_numbers(run_dir, config):
    main = pd.read_csv(run_dir / "tables/main.csv")
    labels = [variant_label(config, name) for name in config["variants"]]
    assert sorted(main["variant"]) == sorted(labels)
    numeric = main.drop(columns=["family", "variant"])
    assert np.isfinite(numeric.to_numpy(dtype=float)).all()
    baseline = config["variants"][config["evaluation"]["baseline"]].get("label")
    assert main.loc[main["variant"] == baseline].filter(like="delta").iloc[0, 0] == 0.0
    # Tokens as the run's files record them: every selection here fills its budget.
    rows = main.set_index("variant")
    for name in config["variants"]:
        row = rows.loc[variant_label(config, name)]
        manifest = json.loads((run_dir / f"selections/{name}/manifest.json").read_text())
        log = pd.read_csv(run_dir / f"models/{name}/train_log.csv")
        assert row["tokens_selected"] == manifest["unique_tokens"] >= manifest["budget_tokens"]
        assert row["tokens_trained"] == log["tokens"].iloc[-1] > 0
        assert row["short_of_budget"] == 0.0
    html = (run_dir / "report/report.html").read_text()
    assert all(label in html for label in labels) and "data:image/png;base64" in html


def test_papers_tables_comparison_and_claims(run_dir, config):
    """Each paper's table in its shape with replicate intervals, the run beside the published
    numbers labelled as a different scale, every claim of the ledger with a verdict."""
    from selectlab.papers.claims import load_claims

    tables = run_dir / "tables"
    dataman = pd.read_csv(tables / "dataman_table1.csv", dtype=str, keep_default_na=False)
    assert list(dataman.columns) == [
        "Selection method", "Val Perplexity", "Test Perplexity",
        "Reading Comprehension (5 tasks)", "Commonsense Reasoning (3 tasks)",
        "World Knowledge (2 tasks)", "Average (10 tasks)"]
    assert dataman["Selection method"].tolist() == ["Uniform", "Uniform (+50% data)",
                                                    *YOUR_LABELS]
    assert " ± " in dataman.iloc[0]["Average (10 tasks)"]  # uniform ran with two seeds
    metarater = pd.read_csv(tables / "metarater_table1.csv")
    assert list(metarater.columns)[-1] == "Average (8 tasks)"
    cells = pd.read_csv(tables / "paper_cells.csv", keep_default_na=False,
                        na_values={"mean": [""], "low": [""], "high": [""]})
    average = cells[(cells["table"] == "dataman_table1") & (cells["column"] == "average")]
    uniform = average[average["variant"] == "uniform"].iloc[0]
    assert uniform["n"] == 2 and uniform["low"] <= uniform["mean"] <= uniform["high"]
    # DataMan's average is over its ten tasks: recomputed here from the run's own icl.json.
    icl = json.loads((run_dir / "eval/uniform_plus50/icl.json").read_text())
    stand_ins = config["evaluation"]["icl"]["stand_ins"]["tasks"]
    dataman_tasks = config["evaluation"]["protocols"]["dataman"]["tasks"]
    ten = [t for g in config["evaluation"]["protocols"]["dataman"]["groups"] for t in g["tasks"]]
    scores = []
    for task in ten:
        entry = icl["settings"][f"{stand_ins[task]}@0"]
        metric = dataman_tasks[task]["metric"]
        scores.append(100 * entry["acc" if metric == "exact_match" else metric])
    plus50 = average[average["variant"] == "uniform_plus50"].iloc[0]
    assert plus50["mean"] == pytest.approx(sum(scores) / 10)
    compared = pd.read_csv(tables / "vs_published.csv")
    assert set(compared["scale"]) == {"different scale"}
    assert {"uniform", "uniform_plus50"} <= set(compared["variant"])
    claims = pd.read_csv(tables / "claims.csv").set_index("id")
    ledger = load_claims(REPO / "config/claims.yaml", REPO / "config/schema/claims.schema.yaml")
    assert list(claims.index) == [c.id for c in ledger]
    assert set(claims["verdict"]) <= {"reproduced", "not reproduced", "inconclusive", "not run"}
    assert claims.loc["dataman_l5_beats_uniform_plus50", "verdict"] == "not run"
    # QuRating Table 6: the setup of raters.qurater.setups fills its row beside the QuRater
    # that annotates, on the same held-out pairs; the setups not configured say so.
    table6 = pd.read_csv(tables / "qurating_table6.csv", keep_default_na=False)
    rows = table6.set_index("QuRater training")
    for trained in ("Multi-task, from a pre-trained model",
                    "Separate models, from a pre-trained model"):
        assert all(" ± " in value for value in rows.loc[trained]), trained
    for untrained in ("Multi-task, from scratch", "Separate models, from scratch"):
        assert set(rows.loc[untrained]) == {"not run"}
    joint = json.loads((run_dir / "raters/qurater/metrics.json").read_text())["metrics"]
    for criterion in ("writing_style", "required_expertise"):
        part = json.loads((run_dir / "raters/qurater_separate_pretrained/model" / criterion /
                           "rater_card.json").read_text())
        assert part["columns"] == [criterion]
        assert part["metrics"][criterion]["pairs_all"] == joint[criterion]["pairs_all"]
    # Meta-rater Figure 1: both models trained part-way were saved and evaluated there.
    for variant in ("uniform", "uniform__rep1", "metarater_model_free"):
        assert (run_dir / f"models/{variant}/final/snapshots/f0.5/model.safetensors").is_file()
        assert json.loads((run_dir / f"eval/{variant}/curve/0.5/icl.json").read_text())["settings"]
    for png in ("metarater_figure1", "paper_spread"):
        assert (run_dir / f"figures/{png}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The report leads with the papers' tables, the comparison and the claims.
    html = (run_dir / "report/report.html").read_text()
    first = html.index("<h2>")
    assert html[first:].startswith("<h2>QuRating Table 1")
    assert html.index("The papers&#x27; claims") < html.index("<h2>Main results")


def test_your_family_and_rows_run_beside_the_papers(run_dir, config, tmp_path):
    """docs/your_method.md's example, run from a folder outside the repository: its family is
    annotated per shard like the built-in ones, its rows are selected, trained and evaluated,
    and every table and the report carries them, labelled as the user's."""
    from selectlab.plugins.families import PluginAnnotator
    from selectlab.plugins.loading import load_object
    from selectlab.shards import read_all

    module = Path(config["annotate"]["families"]["lexical"]["module"])
    assert not module.is_relative_to(REPO) and module.is_file()
    example = load_object({"module": str(write_doc_files(tmp_path)["lexical.py"])}, "family",
                          "test")
    scorer = PluginAnnotator(example, {}, 0)
    density = []
    for meta in sorted((run_dir / "attributes/meta").glob("shard_?????.parquet")):
        sidecar = pd.read_parquet(run_dir / "attributes/lexical" / meta.name)
        assert sidecar["id"].tolist() == pd.read_parquet(meta, columns=["id"])["id"].tolist()
        assert list(sidecar.columns) == ["id", "lexical_density", "mean_word_length",
                                         "missing_reason"]
        docs, _ = read_all([run_dir / "corpus/raw" / f"{meta.stem}.jsonl.zst"],
                           max_chars=config["corpus"]["reader"]["max_doc_chars"])
        texts = {doc.id: doc.text for doc in docs}
        first = sidecar.head(25)
        expected = scorer.score_texts([texts[i] for i in first["id"]])
        assert first["lexical_density"].tolist() == pytest.approx(
            expected["lexical_density"], nan_ok=True)
        density.append(sidecar.set_index("id")["lexical_density"])
    density = pd.concat(density)
    selected = {name: density.reindex(pd.read_parquet(
        run_dir / f"selections/{name}/selection.parquet")["id"]).mean()
        for name in ("uniform", "lexical_t2", "lexical_topk")}
    # Sampling at tau = 2 leans to dense text; the top-k takes the densest.
    assert selected["uniform"] < selected["lexical_t2"] < selected["lexical_topk"]
    main = pd.read_csv(run_dir / "tables/main.csv").set_index("variant")
    assert main.loc[YOUR_LABELS, "family"].tolist() == ["yours", "yours"]
    assert np.isfinite(main.loc[YOUR_LABELS].drop(columns="family").to_numpy(float)).all()
    # The papers' main tables take them (the per-task ones too, where a config has them).
    for table in ("qurating_table1", "dataman_table1", "metarater_table1"):
        rows = pd.read_csv(run_dir / f"tables/{table}.csv").iloc[:, 0].tolist()
        assert rows[-2:] == YOUR_LABELS, table
    assert "Lexical density" not in (run_dir / "tables/metarater_figure1.csv").read_text()
    html = (run_dir / "report/report.html").read_text()
    assert all(html.count(label) >= 7 for label in YOUR_LABELS)
    # The archive handed over carries the family's code, as the rows were selected with it.
    record = json.loads((run_dir / "provenance/provenance.json").read_text())["plugins"]
    assert record["annotate.families.lexical"]["source"] == module.read_text()


def test_report_renders_every_table_and_figure_in_a_browser(run_dir):
    """As a reader sees it in headless Chromium: every figure loaded, every table drawn with
    its rows, every link inside the page resolving."""
    from tests.browser import inspect_report

    seen = inspect_report(run_dir / "report/report.html")
    figures = list((run_dir / "figures").glob("*.png"))
    assert len(seen["images"]) >= 8 and all(image["loaded"] for image in seen["images"])
    assert len(seen["images"]) <= len(figures)
    assert all(t["rows"] >= 1 and t["columns"] >= 2 and t["height"] > 20 for t in seen["tables"])
    assert len(seen["tables"]) >= 10
    assert seen["links"] and all(link["resolves"] for link in seen["links"])


def test_instruction_set_stays_off_the_corpus(run_dir):
    from selectlab.instruct.heldout import CorpusText
    from selectlab.shards import read_all

    corpus_files = sorted((run_dir / "corpus/raw").glob("*.jsonl.zst")) + sorted(
        (run_dir / "corpus/heldout").glob("*.jsonl.zst"))
    corpus = CorpusText(read_all(corpus_files)[0])
    train = pd.read_parquet(run_dir / "instruct/data/train.parquet")
    evaluation = pd.read_parquet(run_dir / "instruct/data/eval.parquet")
    record = json.loads((run_dir / "instruct/data/split.json").read_text())
    pairs = pd.concat([train, evaluation])
    assert (len(train), len(evaluation)) == (record["train_pairs"], record["eval_instructions"])
    assert not pairs["id"].duplicated().any()
    assert not any(corpus.drew(key) for key in pairs["key"])
    assert not any(corpus.contains(text) for text in pairs["response"])
    # The corpus did draw from the same resources, and those texts were left out.
    assert sum(counts.get("drawn_by_corpus", 0) for counts in record["sources"].values()) > 0
    assert set(pairs["source"]) == {"dictionary", "python", "man"}


def test_win_rates_are_real_numbers_from_both_orders(run_dir, config):
    table = pd.read_csv(run_dir / "tables/winrate.csv")
    spec = config["instruct"]["comparisons"]["qurating"]
    assert table["variant"].tolist() == spec["variants"]
    row = table.iloc[0]
    evaluation = pd.read_parquet(run_dir / "instruct/data/eval.parquet")
    assert row["instructions"] + row["failed"] == len(evaluation)
    assert row["wins"] + row["ties"] + row["losses"] == row["instructions"]
    assert 0 <= row["ci_low"] <= row["win_rate"] <= row["ci_high"] <= 100
    assert row["ci_high"] > row["ci_low"]  # the answers differ: not all ties
    assert "REFERENCE-BASED judge" in (run_dir / "tables/winrate.md").read_text()
    judgments = pd.read_parquet(run_dir / "instruct/judgments/qurating/judgments.parquet")
    assert len(judgments) == 2 * len(evaluation) * len(spec["variants"])
    for _, pair in judgments.groupby(["variant", "instruction_id"]):
        first, second = pair.sort_values("order").itertuples()
        assert (first.order, second.order) == (0, 1)
        assert (first.shown_first, second.shown_first) == (first.variant, spec["reference"])
        # The reference-based judge is order-blind: the swapped pair gets the mirrored letter.
        assert {first.parsed, second.parsed} in ({'"A"', '"B"'}, {'"tie"'})
        assert first.value == second.value
    answers = pd.read_parquet(run_dir / "instruct/answers/uniform.parquet")
    assert answers["id"].tolist() == evaluation["id"].tolist() and answers["finished"].any()


def test_fine_tuning_beats_the_same_model_untuned(run_dir, config, tmp_path):
    from selectlab.instruct.generate import GenerateSettings, answers_table, generate_transformers
    from selectlab.instruct.template import ChatTemplate, prompt_ids
    from selectlab.tokens import load_tokenizer

    reference = config["instruct"]["comparisons"]["qurating"]["reference"]
    evaluation = pd.read_parquet(run_dir / "instruct/data/eval.parquet")
    untuned = str(run_dir / "models" / reference / "final")
    template = ChatTemplate(**config["instruct"]["chat_template"])
    tokenizer = load_tokenizer(untuned)
    prompts = [prompt_ids(tokenizer, template, text) for text in evaluation["instruction"]]
    settings = GenerateSettings(config["instruct"]["generate"]["max_new_tokens"], batch_size=20)
    answers = {
        "tuned": pd.read_parquet(run_dir / f"instruct/answers/{reference}.parquet"),
        "untuned": answers_table(evaluation["id"], "untuned",
                                 generate_transformers(untuned, prompts, settings),
                                 "transformers"),
    }
    judged, _ = judge_tuned_against_untuned(evaluation, answers, tmp_path / "cache.sqlite")
    assert judged["value"].mean() > 0.6
