"""Selection gives the documents the in-memory selection gave before it streamed, for every
method and option, whether everything fits in memory or a tiny ceiling forces several passes
over spilled per-document columns.

The reference (`data/selection_reference.json.gz`, see `selection_cases`) holds every case's
chosen documents in training order and its manifest from the in-memory code.
"""

from __future__ import annotations

import numpy as np
import pytest
from selection_cases import CASES, load_reference, positions, run_cases

from selectlab.selection.memory import SelectionLimits
from selectlab.selection.run import run_selection
from selectlab.selection.take import Limits

REFERENCE = load_reference()


def uniform_reference_size(manifest: dict) -> int:
    """Documents of the uniform reference, from the manifest's overlap with it."""
    overlap, unique = manifest["overlap_with_uniform"], manifest["unique_documents"]
    shared = overlap["shared_documents"]
    return round(shared / overlap["jaccard"]) - unique + shared if shared else unique


def tight_limits(name: str) -> SelectionLimits:
    """Room for little more than the case's selection (and its uniform reference), 3-bit
    histograms, everything spilled, the written selection in buckets of 97 rows."""
    manifest = REFERENCE[name]["manifest"]
    room = max(manifest["unique_documents"], uniform_reference_size(manifest)) + 64
    return SelectionLimits(spill=True, take=Limits(room, bits=3), rows_per_bucket=97)


@pytest.fixture(scope="module")
def in_memory(tmp_path_factory):
    takes = {}

    def select(spec, attributes, shards, out_dir, upstream):
        manifest, takes[spec.name] = run_selection(spec, attributes, shards, out_dir, upstream)
        return manifest

    return run_cases(tmp_path_factory.mktemp("memory"), select), takes


@pytest.fixture(scope="module")
def streamed(tmp_path_factory):
    takes = {}

    def select(spec, attributes, shards, out_dir, upstream):
        manifest, takes[spec.name] = run_selection(spec, attributes, shards, out_dir, upstream,
                                                   limits=tight_limits(spec.name))
        return manifest

    return run_cases(tmp_path_factory.mktemp("streamed"), select), takes


def assert_as_before(name: str, manifest: dict, selection) -> None:
    before = REFERENCE[name]
    assert positions(selection) == before["positions"], name
    for key, value in before["manifest"].items():
        assert manifest[key] == value, (name, key)


@pytest.mark.parametrize("name", list(CASES))
def test_in_memory_selection_is_as_before(name, in_memory):
    results, _ = in_memory
    assert_as_before(name, *results[name])


@pytest.mark.parametrize("name", list(CASES))
def test_streamed_selection_is_as_before_in_several_passes(name, streamed):
    results, takes = streamed
    assert_as_before(name, *results[name])
    if CASES[name][0] == "curriculum":
        return
    assert takes[name].collected <= tight_limits(name).take.solve_units
    if not REFERENCE[name]["manifest"]["short_strata"]:
        # A histogram pass, at least one refinement of the 3-bit bins, the collection (when
        # strata are short, all their eligible documents are taken in two).
        assert takes[name].walks >= 3, name


def test_written_rows_carry_the_meta_sidecars_values(streamed, tmp_path):
    import pandas as pd
    from selection_cases import DOCS, SHARDS

    results, _ = streamed
    _, selection = results["sample_t1"]
    attributes = next(tmp_path.parent.glob("streamed*")) / "attributes"
    meta = pd.concat(pd.read_parquet(attributes / "meta" / f"{s}.parquet") for s in SHARDS)
    rows = meta.iloc[np.asarray(positions(selection))]
    assert selection["id"].tolist() == rows["id"].tolist()
    assert selection["token_offset"].tolist() == rows["token_offset"].tolist()
    assert selection["rank"].tolist() == list(range(len(selection)))
    assert (selection["row"] < DOCS).all()
