"""A MATES variant assembled from its stages: selection, model copy, training log."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from selectlab.mates.assemble import final_model, joined_log, union_selection


def stage_files(tmp_path, stage: int, ids: list[str], tokens: int):
    directory = tmp_path / f"stage{stage}"
    directory.mkdir()
    pd.DataFrame({"shard": "shard_00000", "row": range(len(ids)), "id": ids,
                  "set_name": "RedPajamaWikipedia", "n_tokens": tokens, "token_offset": 0,
                  "rank": range(len(ids))}).to_parquet(directory / "selection.parquet")
    (directory / "manifest.json").write_text(json.dumps({
        "variant": f"m__stage{stage}", "method": "uniform" if stage == 1 else "rating_sample",
        "seed": 5, "budget_tokens": 100, "selected_tokens": tokens * len(ids),
        "pool_tokens": 1000, "pool_documents": 50, "budget_reached": True}))
    pd.DataFrame({"step": [1, 2], "tokens": [50, 100], "loss": [5.0, 4.0], "lr": [1e-3, 1e-3],
                  "seconds": [1.0, 2.0]}).to_csv(directory / "log.csv", index=False)
    model = directory / "final"
    model.mkdir()
    (model / "model.safetensors").write_bytes(bytes([stage]))
    (model / "training_card.json").write_text(json.dumps(
        {"parameters": 7, "tokens": 100, "cost": {"flops": 1.0}}))
    return directory


def test_the_stages_documents_in_order_make_the_variants_selection(tmp_path):
    one, two = stage_files(tmp_path, 1, ["a", "b"], 50), stage_files(tmp_path, 2, ["c", "d"], 50)
    manifest = union_selection([one / "selection.parquet", two / "selection.parquet"],
                               [one / "manifest.json", two / "manifest.json"], tmp_path / "out",
                               variant="m", settings={"stages": 2}, budget_tokens=200)
    union = pd.read_parquet(tmp_path / "out" / "selection.parquet")
    assert union["id"].tolist() == ["a", "b", "c", "d"]
    assert union["stage"].tolist() == [1, 1, 2, 2] and union["rank"].tolist() == [0, 1, 2, 3]
    assert manifest["selected_tokens"] == manifest["unique_tokens"] == 200
    assert manifest["budget_reached"]
    assert [s["method"] for s in manifest["stages"]] == ["uniform", "rating_sample"]
    clash = stage_files(tmp_path, 3, ["b"], 50)
    with pytest.raises(ValueError, match="two stages"):
        union_selection([one / "selection.parquet", clash / "selection.parquet"],
                        [one / "manifest.json", clash / "manifest.json"], tmp_path / "bad",
                        variant="m", settings={}, budget_tokens=200)


def test_the_variants_model_is_the_last_stages_and_its_log_continues_across_stages(tmp_path):
    one, two = stage_files(tmp_path, 1, ["a"], 50), stage_files(tmp_path, 2, ["b"], 50)
    log = joined_log([one / "log.csv", two / "log.csv"])
    assert log["step"].tolist() == [1, 2, 3, 4] and log["tokens"].tolist() == [50, 100, 150, 200]
    assert log["seconds"].tolist() == [1.0, 2.0, 3.0, 4.0]
    card = final_model([one / "final", two / "final"], [one / "log.csv", two / "log.csv"],
                       tmp_path / "m" / "final", tmp_path / "m" / "train_log.csv", variant="m")
    assert (tmp_path / "m" / "final" / "model.safetensors").read_bytes() == bytes([2])
    assert card["steps"] == 4 and card["tokens"] == 200 and "cost" not in card
    assert all("cost" not in stage for stage in card["stages"])
    assert pd.read_csv(tmp_path / "m" / "train_log.csv")["step"].tolist() == [1, 2, 3, 4]
