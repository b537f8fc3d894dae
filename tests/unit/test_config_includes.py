"""`include:` in a config file: the named files lie under it, paths relative to the file."""

from __future__ import annotations

import yaml

from selectlab.config import load_config, load_workflow_config, read_config_file, with_includes
from tests.conftest import REPO


def write(path, data) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def test_the_including_file_wins_and_includes_of_includes_lie_lowest(tmp_path):
    write(tmp_path / "parts" / "deep.yaml", {"a": {"x": 0, "y": 0, "z": 0}})
    write(tmp_path / "parts" / "one.yaml", {"include": ["deep.yaml"], "a": {"x": 1, "y": 1}})
    write(tmp_path / "parts" / "two.yaml", {"a": {"y": 2}, "b": 2})
    top = write(tmp_path / "top.yaml", {"include": ["parts/one.yaml", "parts/two.yaml"],
                                        "a": {"x": 9}, "run": "r"})
    merged = with_includes(read_config_file(top), [top])
    assert merged == {"a": {"x": 9, "y": 2, "z": 0}, "b": 2, "run": "r"}
    # --config overrides and a later --configfile arrive in `config`: they win over includes.
    later = write(tmp_path / "later.yaml", {"b": 5})
    config = read_config_file(top) | {"b": 5}
    assert with_includes(config, [top, later])["b"] == 5


def test_a_copy_written_elsewhere_still_finds_its_includes(tmp_path):
    copy = tmp_path / "elsewhere" / "paper.yaml"
    write(copy, read_config_file(REPO / "config" / "paper.yaml"))
    assert load_config(copy) == load_config(REPO / "config" / "paper.yaml")


def test_shipped_configs_keep_their_rows_in_view_and_include_the_rest():
    for name, most in (("paper", 330), ("config", 300)):
        path = REPO / "config" / f"{name}.yaml"
        assert len(path.read_text().splitlines()) <= most
        written = yaml.safe_load(path.read_text())
        assert "variants" in written and "include" in written and "evaluation" not in written
        config = load_workflow_config([path], REPO / "config" / "schema")
        assert "include" not in config and config["evaluation"]["protocols"]
