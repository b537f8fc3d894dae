"""Checksums, provenance redaction and the byte-reproducible archive."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import platform
import subprocess
import tarfile
from pathlib import Path

import pytest

from selectlab.report.archive import (
    MANIFEST_NAME,
    build_archive,
    environment_record,
    is_secret_key,
    provenance_record,
    sha256_file,
    without_measurements,
    write_checksums,
)

SECRET = "sk-THIS-MUST-NOT-LEAK-123"


def make_files(root: Path) -> dict[str, Path]:
    files = {
        "tables/main.csv": b"family,variant,average\nuniform,Uniform,40.0\n",
        "figures/ppl_vs_icl.png": bytes(range(256)) * 40,
        "report/report.html": "<!DOCTYPE html><p>caf\u00e9</p>\n".encode(),
        "provenance/environment.txt": b"python: 3.11\n",
    }
    members = {}
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        members[name] = path
    return members


def test_sha256_file_matches_hashlib(tmp_path):
    path = tmp_path / "blob.bin"
    path.write_bytes(b"x" * (3 << 20))  # spans several read chunks
    assert sha256_file(path) == hashlib.sha256(path.read_bytes()).hexdigest()


def test_write_checksums_is_sorted_relative_sha256sum_format(tmp_path):
    members = make_files(tmp_path)
    relative = [Path(name) for name in members][::-1]
    manifest = write_checksums(tmp_path, [relative[0], *(members[n] for n in members)])
    assert manifest == tmp_path / MANIFEST_NAME
    lines = manifest.read_text().splitlines()
    names = [line.split("  ", 1)[1] for line in lines]
    assert names == sorted(members)
    for line in lines:
        digest, name = line.split("  ", 1)
        assert digest == hashlib.sha256((tmp_path / name).read_bytes()).hexdigest()
    check = subprocess.run(["sha256sum", "-c", MANIFEST_NAME], cwd=tmp_path, capture_output=True)
    assert check.returncode == 0


def test_archive_rebuilt_from_identical_files_is_byte_identical(tmp_path):
    first_members = make_files(tmp_path / "first")
    second_members = make_files(tmp_path / "second")
    for path in second_members.values():
        os.utime(path, (1_700_000_000, 1_700_000_000))  # different mtimes must not matter
    os.chmod(second_members["tables/main.csv"], 0o600)  # nor different permissions
    reversed_members = dict(reversed(list(second_members.items())))

    one = tmp_path / "out" / "selectlab-test.tar.gz"
    two = tmp_path / "out2" / "selectlab-test.tar.gz"
    build_archive(one, first_members)
    build_archive(two, reversed_members)
    assert one.read_bytes() == two.read_bytes()
    build_archive(one, first_members)  # rebuilding over an existing archive
    assert one.read_bytes() == two.read_bytes()
    assert sorted(p.name for p in one.parent.iterdir()) == [one.name]  # no temp file left
    assert one.read_bytes()[4:8] == b"\x00\x00\x00\x00"  # gzip header mtime


def test_archive_members_are_normalised_and_manifest_covers_them(tmp_path):
    members = make_files(tmp_path / "files")
    out = tmp_path / "archive.tar.gz"
    build_archive(out, members)
    with tarfile.open(out, "r:gz") as tar:
        infos = tar.getmembers()
        names = [info.name for info in infos]
        assert names == sorted([*members, MANIFEST_NAME])
        for info in infos:
            assert (info.mtime, info.uid, info.gid, info.mode) == (0, 0, 0, 0o644)
            assert (info.uname, info.gname) == ("", "")
            assert info.isfile()
        manifest = tar.extractfile(MANIFEST_NAME).read().decode()
        contents = {name: tar.extractfile(name).read() for name in members}
    listed = dict(reversed(line.split("  ", 1)) for line in manifest.splitlines())
    assert set(listed) == set(members)
    for name, data in contents.items():
        assert data == members[name].read_bytes()
        assert listed[name] == hashlib.sha256(data).hexdigest()
    with gzip.open(out) as handle:
        assert tarfile.open(fileobj=io.BytesIO(handle.read())).getnames() == names


@pytest.mark.parametrize("bad", ["../escape.txt", "/abs/path.txt", "", MANIFEST_NAME])
def test_archive_rejects_unsafe_or_reserved_names(tmp_path, bad):
    path = tmp_path / "f.txt"
    path.write_text("x")
    with pytest.raises(ValueError):
        build_archive(tmp_path / "a.tar.gz", {bad: path})
    assert not (tmp_path / "a.tar.gz").exists()


def test_secret_keys_are_recognised_but_token_counts_are_not():
    for key in [
        "api_key",
        "OPENAI_API_KEY",
        "apiKey",
        "hf_token",
        "Token",
        "token_env",
        "client_secret",
        "db_password",
        "accessToken",
    ]:
        assert is_secret_key(key), key
    for key in ["budget_tokens", "tokens", "tokenizer", "max_new_tokens", "seq_len", "model"]:
        assert not is_secret_key(key), key


def test_provenance_redacts_secrets_and_is_stable(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # even if TMPDIR is in a repo
    config = {
        "run": "test",
        "budget_tokens": 500_000,
        "judge": {"backend": "simulated", "api_key": SECRET, "api_key_env": "OPENAI_API_KEY"},
        "endpoints": [{"url": "http://localhost:8000", "Auth_Token": SECRET}],
        "hub": {"HF_TOKEN": SECRET, "password": SECRET, "client_secret": {"value": SECRET}},
    }
    checksums = {"corpus/raw/b.jsonl.zst": "b" * 64, "corpus/raw/a.jsonl.zst": "a" * 64}
    record = provenance_record(config, checksums, tmp_path)
    text = json.dumps(record, sort_keys=True)
    assert SECRET not in text
    assert "OPENAI_API_KEY" not in text
    assert record["config"]["judge"] == {
        "backend": "simulated",
        "api_key": "<redacted>",
        "api_key_env": "<redacted>",
    }
    assert record["config"]["budget_tokens"] == 500_000
    assert record["config"]["endpoints"][0]["url"] == "http://localhost:8000"
    assert config["judge"]["api_key"] == SECRET  # the caller's dict is untouched
    assert list(record["inputs"]) == sorted(checksums)
    assert record["git"] == {"commit": "unknown", "dirty": "unknown"}  # tmp_path is no checkout
    assert provenance_record(config, checksums, tmp_path) == record


def git(repo: Path, *args: str) -> str:
    command = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    done = subprocess.run([*command, *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_provenance_records_commit_and_dirty_state(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "a.txt").write_text("one\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "first")
    clean = provenance_record({}, {}, repo)["git"]
    assert clean == {"commit": git(repo, "rev-parse", "HEAD"), "dirty": False}
    (repo / "a.txt").write_text("two\n")
    assert provenance_record({}, {}, repo)["git"]["dirty"] is True


def test_environment_record_lists_python_and_sorted_packages():
    record = environment_record()
    assert f"python: {platform.python_version()}" in record
    assert "torch" in record
    packages = record.split("packages:\n", 1)[1].splitlines()
    assert any(line.lower().startswith("pandas==") for line in packages)
    assert all("==" in line for line in packages)
    keys = [line.split("==")[0].lower().replace("_", "-").replace(".", "-") for line in packages]
    assert keys == sorted(keys) and len(keys) == len(set(keys))


def test_measured_columns_stay_out_of_the_archive(tmp_path):
    """Two runs whose judge summaries differ only in latency archive the same bytes."""
    archives = []
    for run, latency in (("a", 1.25), ("b", 9.5)):
        summary = tmp_path / run / "judgments" / "prrc" / "summary.csv"
        summary.parent.mkdir(parents=True)
        summary.write_text("criterion,queries,backend_error,latency_s,tokens_per_s\n"
                           f"all,10,2,{latency},{100 / latency}\n")
        kept = without_measurements(summary)
        assert kept.decode() == "criterion,queries,backend_error\nall,10,2\n"
        out = tmp_path / run / "archive.tar.gz"
        build_archive(out, {"judgments/prrc/summary.csv": kept})
        archives.append(out.read_bytes())
        with tarfile.open(out, "r:gz") as tar:
            member = tar.extractfile("judgments/prrc/summary.csv").read()
            manifest = tar.extractfile(MANIFEST_NAME).read().decode()
        assert member == kept and hashlib.sha256(kept).hexdigest() in manifest
    assert archives[0] == archives[1]
    plain = tmp_path / "plain.csv"
    plain.write_text("a,b\n1,2\n")
    assert without_measurements(plain) == plain.read_bytes()


def test_json_records_and_markdown_tables_lose_their_timings_only(tmp_path):
    record = {"tasks": {"arc_easy": {"acc": 0.5}},
              "cost": {"flops": 12.0, "seconds": 2.1, "wall_hours": 0.0006, "gpu_hours": 0.0},
              "runs": [{"step": 1, "tokens_per_s": 88.0}]}
    (tmp_path / "icl.json").write_text(json.dumps(record))
    kept = json.loads(without_measurements(tmp_path / "icl.json"))
    assert kept == {"tasks": {"arc_easy": {"acc": 0.5}}, "cost": {"flops": 12.0},
                    "runs": [{"step": 1}]}
    (tmp_path / "cost.md").write_text(
        "| stage | flops | gpu_hours | wall_hours |\n| --- | ---: | ---: | ---: |\n"
        "| rating \\| judge | 12.0 | 0.0 | 0.25 |\n\n- wall_hours counts every job.\n")
    assert without_measurements(tmp_path / "cost.md").decode() == (
        "| stage | flops |\n| --- | ---: |\n| rating \\| judge | 12.0 |\n\n"
        "- wall_hours counts every job.\n")
    for name, text in (("plain.json", '{"a": 1}'), ("plain.md", "| a |\n| --- |\n| 1 |\n")):
        (tmp_path / name).write_text(text)
        assert without_measurements(tmp_path / name) == text.encode()
