"""Your own score family and selection method (selectlab.plugins): the worked example of
docs/your_method.md scores what it says, a method of yours selects like the built-in it
mirrors, bad plugins are refused before any job with one line each, and your rows are labelled
and join the papers' open tables."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pandas as pd
import pytest

from selectlab.config import load_workflow_config
from selectlab.crossref import problems
from selectlab.plugins import PluginError
from selectlab.plugins.families import PluginAnnotator, checked_columns, spec_of
from selectlab.plugins.loading import load_object
from selectlab.plugins.rows import variant_label
from selectlab.selection.run import SelectionSpec, select_variant
from selectlab.selection.synthetic import write_synthetic_sidecars
from tests.your_method import write_doc_files

REPO = Path(__file__).resolve().parents[2]
SCHEMA_DIR = REPO / "config" / "schema"
TEST_CONFIG = REPO / ".test" / "config.yaml"


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text))
    return path


def test_the_documented_family_is_short_and_scores_what_it_says(tmp_path):
    files = write_doc_files(tmp_path)
    assert set(files) == {"lexical.py", "your_method.yaml"}
    assert len(files["lexical.py"].read_text().splitlines()) <= 30
    family = load_object({"module": str(files["lexical.py"])}, "family", "test")
    annotator = PluginAnnotator(family, {}, 0)
    annotator.setup()
    columns = annotator.score_texts(["The cat sat on the mat", "Quantum chromodynamics", "..."])
    # "the", "on", "the" are function words: 3 of 6 words carry content.
    assert columns["lexical_density"] == [0.5, 1.0, None]
    assert columns["mean_word_length"][:2] == [pytest.approx(17 / 6), pytest.approx(21 / 2)]
    assert columns["missing_reason"] == [None, None,
                                         "lexical_density: no value;mean_word_length: no value"]
    assert [f.name for f in annotator.schema] == ["lexical_density", "mean_word_length",
                                                  "missing_reason"]


def test_a_relative_module_is_found_beside_the_config_file_that_names_it(tmp_path):
    files = write_doc_files(tmp_path)
    config = load_workflow_config([TEST_CONFIG, files["your_method.yaml"]], SCHEMA_DIR)
    assert config["annotate"]["families"]["lexical"]["module"] == str(files["lexical.py"])
    assert problems(config) == []
    assert variant_label(config, "lexical_t2") == "Lexical density tau=2 (yours)"
    assert variant_label(config, "uniform") == "Uniform"


def test_your_rows_join_the_papers_main_and_per_task_tables_only(tmp_path):
    from selectlab.papers.protocols import paper_tables

    files = write_doc_files(tmp_path)
    config = load_workflow_config([TEST_CONFIG, files["your_method.yaml"]], SCHEMA_DIR)
    rows = {table.name: table.rows for table in paper_tables(config)}
    for name in ("qurating_table1", "dataman_table1", "metarater_table1"):
        assert rows[name][-2:] == ("lexical_topk", "lexical_t2"), name
    assert "lexical_topk" not in rows["metarater_figure1"]


BAD = """\
    import math
    from selectlab.plugins import score_family, selection_method

    @score_family(columns=["a"])
    def short(texts):
        return {"a": [1.0] * (len(texts) - 1)}

    @score_family(columns=["b"])
    def words(texts):
        return {"b": ["x" for _ in texts]}

    @score_family(columns=["c"])
    def nans(texts):
        return {"c": [math.nan if "def" in t else 1.0 for t in texts]}

    @score_family(columns=["d"])
    def needs_scale(texts, scale):
        return {"d": [scale for _ in texts]}

    def undecorated(texts):
        return {}

    @selection_method()
    def rule(units):
        return units.random
"""


def bad_config(tmp_path: Path, families: dict, methods: dict | None = None,
               variants: dict | None = None) -> dict:
    write(tmp_path, "bad.py", BAD)
    lines = ["annotate:", "  families:"]
    lines += [f"    {name}: {{kind: plugin, module: bad.py{extra}}}"
              for name, extra in families.items()]
    if methods:
        lines += ["selection:", "  budget_tokens: 60000", "  methods:"]
        lines += [f"    {name}: {{module: bad.py, function: {function}}}"
                  for name, function in methods.items()]
    if variants:
        lines += ["variants:"] + [f"  {name}: {body}" for name, body in variants.items()]
    overlay = tmp_path / "bad.yaml"
    overlay.write_text("\n".join(lines) + "\n")
    return load_workflow_config([TEST_CONFIG, overlay], SCHEMA_DIR)


def test_bad_plugins_are_refused_before_any_job_one_line_each(tmp_path):
    config = bad_config(tmp_path, {
        "short": ", function: short", "words": ", function: words", "nans": ", function: nans",
        "needs_scale": ", function: needs_scale", "gone": ", function: nowhere",
        "plain": ", function: undecorated", "several": "", "ranks": ", function: short",
    }, methods={"topk": "rule", "rule": "rule"}, variants={
        "r1": "{family: yours, method: rule, params: {tau: 2}}",
        "r2": "{family: yours, method: rulez}"})
    found = problems(config)
    expected = [
        "annotate.families.short (probe texts): column 'a' has 2 values for 3 texts",
        "annotate.families.words (probe texts): column 'b' is not float64: value 'x'",
        "annotate.families.nans (probe texts): NaN scores (1 in 'c') of 3 texts",
        "annotate.families.needs_scale: needs_scale(texts, scale) does not fit",
        "annotate.families.gone.function: ",
        "annotate.families.plain: <function undecorated",
        "annotate.families.several: ",
        "annotate.families.ranks: 'ranks' is the name of a built-in family",
        "selection.methods.topk: 'topk' is a built-in selection method",
        "variants.r1.method: rule(units) does not take the variant's options ['tau']",
        "variants.r2.method: 'rulez' is not a selection method",
    ]
    for start in expected:
        assert sum(line.startswith(start) for line in found) == 1, (start, found)
    assert "has 4 objects decorated as a score family" in next(
        line for line in found if line.startswith("annotate.families.several"))
    assert "(did you mean 'rule'?)" in found[-1] or any("did you mean 'rule'" in line
                                                         for line in found)


def test_a_missing_module_is_named_with_where_it_was_looked_for(tmp_path):
    overlay = write(tmp_path, "missing.yaml", """\
        annotate:
          families:
            mine: {kind: plugin, module: not_here.py}
            dotted: {kind: plugin, module: no_such_package.scores}
    """)
    found = problems(load_workflow_config([TEST_CONFIG, overlay], SCHEMA_DIR))
    assert f"annotate.families.mine.module: no file '{tmp_path / 'not_here.py'}'" in found[0]
    assert found[1].startswith("annotate.families.dotted.module: cannot import "
                               "'no_such_package.scores'")


def test_nan_scores_are_refused_or_quarantined_and_counted():
    from selectlab.plugins import score_family

    @score_family(columns=["c"])
    def half_nan(texts):
        return {"c": [float("nan") if i % 2 else 1.0 for i in range(len(texts))]}

    spec = spec_of(half_nan)
    with pytest.raises(PluginError, match=r"NaN scores \(2 in 'c'\) of 4 texts"):
        checked_columns(half_nan(["a"] * 4), spec, 4, "where")
    annotator = PluginAnnotator(half_nan, {}, 0, nan="quarantine")
    columns = annotator.score_texts(["a"] * 4)
    assert columns["c"] == [1.0, None, 1.0, None]
    assert columns["missing_reason"] == [None, "nan: c", None, "nan: c"]
    assert annotator.failure_counts() == {"nan: c": 2}


def test_columns_of_the_wrong_type_or_undeclared_are_refused():
    from selectlab.plugins import score_family

    @score_family(columns={"n": "int64"})
    def counts(texts):
        return {"n": [1.5 for _ in texts]}

    with pytest.raises(PluginError, match="column 'n' is not int64: value 1.5"):
        checked_columns(counts(["a"]), spec_of(counts), 1, "where")
    with pytest.raises(PluginError, match=r"undeclared \['extra'\]"):
        checked_columns({"n": [1], "extra": [2]}, spec_of(counts), 1, "where")
    with pytest.raises(PluginError, match="not allowed"):
        score_family(columns=["id"])


@pytest.fixture(scope="module")
def attributes(tmp_path_factory):
    directory = tmp_path_factory.mktemp("plugin_attributes")
    write_synthetic_sidecars(directory, ["a", "b"], 800, seed=5)
    return directory


def selected(directory: Path, out: Path, method: str, params: dict,
             plugin: dict | None = None) -> pd.DataFrame:
    spec = SelectionSpec(method, method, 60_000, 7, params, plugin=plugin)
    select_variant(spec, directory, ["a", "b"], out)
    return pd.read_parquet(out / "selection.parquet")


def test_your_method_selects_exactly_as_the_builtin_it_mirrors(attributes, tmp_path):
    rules = write(tmp_path, "rules.py", """\
        import numpy as np
        from selectlab.plugins import selection_method

        @selection_method()
        def whole_pool(units):
            return units.scores["scores.good"]

        @selection_method(per="unit")
        def by_shard(units):
            return units.scores["scores.good"]

        @selection_method(per="unit", ties="none")
        def level(units, level):
            keys = units.random.copy()
            keys[units.scores["levels.overall_score"] != np.float32(level)] = -np.inf
            return keys

        @selection_method(ties="none")
        def level_mask(units, level):
            return units.scores["levels.overall_score"] == level
    """)
    builtin = selected(attributes, tmp_path / "topk", "topk", {"score": "scores.good"})
    for function in ("whole_pool", "by_shard"):
        mine = selected(attributes, tmp_path / function, "mine", {"score": "scores.good"},
                        {"module": str(rules), "function": function})
        pd.testing.assert_frame_equal(mine, builtin)
    level = {"score": "levels.overall_score", "level": 4}
    builtin = selected(attributes, tmp_path / "level", "score_level", level)
    for function in ("level", "level_mask"):
        mine = selected(attributes, tmp_path / function, "mine", level,
                        {"module": str(rules), "function": function})
        pd.testing.assert_frame_equal(mine, builtin)


def test_a_method_returning_the_wrong_length_fails_the_job_saying_so(attributes, tmp_path):
    rules = write(tmp_path, "broken.py", """\
        from selectlab.plugins import selection_method

        @selection_method()
        def short(units):
            return units.random[:-1]
    """)
    with pytest.raises(PluginError, match=r"priorities of shape \(1599,\) for 1600 units"):
        selected(attributes, tmp_path / "out", "short", {"score": "scores.good"},
                 {"module": str(rules)})


def test_a_family_installed_as_an_entry_point_and_a_dotted_module_load(tmp_path, monkeypatch):
    write(tmp_path, "my_scores.py", """\
        from selectlab.plugins import score_family

        @score_family(columns=["chars"])
        def length(texts):
            return {"chars": [len(t) for t in texts]}
    """)
    info = tmp_path / "my_scores-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-scores\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[selectlab.score_families]\nlength = my_scores:length\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    by_entry_point = load_object({"entry_point": "length"}, "family", "where")
    by_import_path = load_object({"module": "my_scores", "function": "length"}, "family", "where")
    assert by_entry_point is by_import_path
    assert PluginAnnotator(by_entry_point, {}, 0).score_texts(["abc"])["chars"] == [3.0]
    with pytest.raises(PluginError, match="no entry point 'other' in group "
                                          "'selectlab.score_families'"):
        load_object({"entry_point": "other"}, "family", "where")


def test_a_class_family_gets_its_options_and_device_and_loads_once(tmp_path):
    module = write(tmp_path, "model_scores.py", """\
        from selectlab.plugins import score_family

        @score_family(columns={"words": "int64", "scaled": "float64"}, label="my-model")
        class WordModel:
            loads = 0

            def __init__(self, scale, device):
                self.scale, self.device = scale, device

            def setup(self):
                WordModel.loads += 1

            def __call__(self, texts):
                counts = [len(t.split()) for t in texts]
                return {"words": counts, "scaled": [self.scale * n for n in counts],
                        "missing_reason": [None] * len(texts)}
    """)
    cls = load_object({"module": str(module)}, "family", "where")
    annotator = PluginAnnotator(cls, {"scale": 0.5}, 0)
    annotator.setup()
    assert annotator.score.device == "cpu" and annotator.model_label == "my-model"
    assert annotator.score_texts(["a b c", "d"]) == {
        "words": [3, 1], "scaled": [1.5, 0.5], "missing_reason": [None, None]}
    annotator.score_texts(["e"])
    assert cls.loads == 1
    config_dir = tmp_path / "cfg"
    config_dir.mkdir()
    overlay = write(config_dir, "class.yaml", f"""\
        annotate:
          families:
            words: {{kind: plugin, module: {module}, options: {{scale: 2}}}}
            no_options: {{kind: plugin, module: {module}}}
    """)
    found = problems(load_workflow_config([TEST_CONFIG, overlay], SCHEMA_DIR))
    assert len(found) == 1 and found[0].startswith(
        "annotate.families.no_options: WordModel(scale, device) does not fit")
