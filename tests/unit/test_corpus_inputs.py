"""The embedded corpus reads only declared packages' files, and records what it read."""

from __future__ import annotations

import pytest

from selectlab.corpus import web_sources as web
from selectlab.corpus.debian import package_files, package_version
from selectlab.corpus.inputs import corpus_inputs, files_record
from selectlab.corpus.passages import MissingResourceError


def owner_files(packages) -> set[str]:
    return {path for package in packages for path in package_files(package)}


def test_changelogs_and_man_pages_come_from_the_declared_packages_only():
    declared = ("bash", "coreutils")
    changelogs = web.list_changelogs(web.DEFAULT_DOC_ROOT, declared)
    pages = web.list_man_pages(web.DEFAULT_MAN_ROOT, declared)
    owned = owner_files(declared)
    assert changelogs and pages
    assert {str(p) for p in changelogs} <= owned and {str(p) for p in pages} <= owned
    # Everything else installed (test extras, cluster tools) stays out of the corpus.
    every_page = web.list_man_pages(web.DEFAULT_MAN_ROOT, web.DEFAULT_WEB_PACKAGES)
    assert set(pages) < set(every_page)
    assert {str(p) for p in every_page} <= owner_files(web.DEFAULT_WEB_PACKAGES)


def test_a_declared_package_that_is_not_installed_is_named():
    with pytest.raises(MissingResourceError, match="apt-get install no-such-package-xyz"):
        web.list_changelogs(web.DEFAULT_DOC_ROOT, ("no-such-package-xyz",))


def test_inputs_record_versions_and_checksums_of_what_is_read():
    params = {"max_docs": 5, "min_chars": 100, "max_chars": 2000,
              "mix": {"changelog": 1, "man": 1}, "packages": ["bash", "sed"]}
    record = corpus_inputs({"web": params})["web"]
    assert record["debian"]["bash"] == package_version("bash")
    assert set(record["debian"]) == {"bash", "sed", *web.MAN_TOOL_PACKAGES}
    changelogs = web.list_changelogs(web.DEFAULT_DOC_ROOT, ("bash", "sed"))
    assert record["components"]["changelog"] == files_record(changelogs)
    assert record == corpus_inputs({"web": params})["web"]  # a pure function of the system


def test_the_checksum_follows_names_and_contents(tmp_path):
    (tmp_path / "a").write_text("one")
    (tmp_path / "b").write_text("two")
    before = files_record([tmp_path / "b", tmp_path / "a"], tmp_path)
    assert before == files_record([tmp_path / "a", tmp_path / "b"], tmp_path)
    assert before["files"] == 2
    (tmp_path / "b").write_text("changed")
    assert files_record([tmp_path / "a", tmp_path / "b"], tmp_path)["sha256"] != before["sha256"]
