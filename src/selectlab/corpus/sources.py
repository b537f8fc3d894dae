"""Readers that turn the offline resources of this machine into raw texts, one per source.

Every reader has the signature `(params, rng) -> Iterator[RawText]`. `params` always carries
`max_docs`, `min_chars` and `max_chars`; texts under `min_chars` are dropped and longer ones are
cut into passages (see `passages.split_passages`). Optional params locate the data and have
defaults that work on a machine with the packages of docs/offline resources installed; missing
data raises `MissingResourceError` naming the package to install. Readers shuffle candidates
with `rng` and stop as soon as `max_docs` texts are out, so the same seed gives the same texts
and a small corpus never pays for reading a whole resource.

Sources map onto SlimPajama's strata: wikipedia -> Wikipedia, book -> Books (KJV),
code -> GitHub (Python stdlib), docs -> StackExchange stand-in (Python docs and FAQ), web ->
CommonCrawl stand-in (see `web_sources`).
"""

from __future__ import annotations

import ast
import functools
import os
import random
import re
import shutil
import subprocess
import sysconfig
import tokenize
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from selectlab.corpus.htmltext import render_html
from selectlab.corpus.passages import (
    MissingResourceError,
    RawText,
    child_rng,
    first_n,
    part_detail,
    reader_limits,
    sample_passages,
    split_passages,
    take_mixed,
)
from selectlab.corpus.web_sources import read_web
from selectlab.corpus.wiki import language_tag, lead_text, load_wikipedia_leads

__all__ = ["RawText", "MissingResourceError", "SOURCE_READERS", "read_wikipedia", "read_book",
           "read_code", "read_docs", "read_web"]

Reader = Callable[[Mapping, random.Random], Iterator[RawText]]


# -- wikipedia ---------------------------------------------------------------------------------
def read_wikipedia(params: Mapping, rng: random.Random) -> Iterator[RawText]:
    """English Wikipedia lead extracts, the article title as first line.

    Optional params: `language` ("en-us"), `data_dir`, `passages_per_article` (1).
    """
    max_docs, min_chars, max_chars = reader_limits(params)
    language = params.get("language", "en-us")
    leads = load_wikipedia_leads(language, params.get("data_dir"))
    cap = params.get("passages_per_article", 1)
    order = list(range(len(leads)))
    rng.shuffle(order)

    def texts() -> Iterator[RawText]:
        for index in order:
            title, extract = leads[index]
            passages = split_passages(lead_text(title, extract), min_chars, max_chars)
            for j in sample_passages(passages, cap, rng, keep_first=True):
                detail = part_detail(f"wikipedia:{language_tag(language)}:{title}", j,
                                     len(passages))
                yield RawText("wikipedia", detail, passages[j])

    return first_n(texts(), max_docs)


# -- book: King James Bible --------------------------------------------------------------------
_CHAPTER_HEADING = re.compile(r"^(\S.*) (\d+)$")
_VERSE = re.compile(r"^\s+(\d+) (.+)$")

Chapter = tuple[str, int, tuple[tuple[int, str], ...]]  # book, chapter, (verse number, text)


@functools.lru_cache(maxsize=2)
def load_kjv_chapters(command: str = "bible") -> tuple[Chapter, ...]:
    """All 1,189 chapters, decoded by the `bible` CLI of the bible-kjv package."""
    executable = shutil.which(command)
    if executable is None:
        raise MissingResourceError(f"KJV decoder `{command}` not found: apt-get install bible-kjv")
    result = subprocess.run([executable, "-l0", "gen1:1-rev22:21"], capture_output=True,
                            text=True, timeout=120, check=False)
    if result.returncode != 0:
        raise MissingResourceError(f"`{command}` failed ({result.stderr.strip()[:200]}): "
                                   "apt-get install bible-kjv bible-kjv-text")
    chapters: list[Chapter] = []
    book, number, verses = "", 0, []
    for line in result.stdout.splitlines():
        verse = _VERSE.match(line)
        if verse and book:
            verses.append((int(verse.group(1)), verse.group(2).strip()))
            continue
        heading = _CHAPTER_HEADING.match(line)
        if heading:
            if verses:
                chapters.append((book, number, tuple(verses)))
            book, number, verses = heading.group(1), int(heading.group(2)), []
    if verses:
        chapters.append((book, number, tuple(verses)))
    if not chapters:
        raise MissingResourceError("`bible` printed no verses: apt-get install bible-kjv-text")
    return tuple(chapters)


def _verse_groups(verses: tuple[tuple[int, str], ...], min_chars: int, max_chars: int,
                  rng: random.Random) -> list[tuple[int, int]]:
    """Consecutive verse ranges [start, stop) of a random target length each."""
    groups: list[tuple[int, int]] = []
    start = 0
    while start < len(verses):
        budget = rng.randint(min_chars, max_chars) - 40  # room for the heading and breaks
        stop, length = start, 0
        while stop < len(verses) and (stop == start or length + len(verses[stop][1]) < budget):
            length += len(verses[stop][1]) + 1
            stop += 1
        groups.append((start, stop))
        start = stop
    # A short tail reads better as the end of the previous passage than on its own.
    if len(groups) > 1:
        tail = sum(len(text) + 1 for _, text in verses[groups[-1][0]:groups[-1][1]])
        head = sum(len(text) + 1 for _, text in verses[groups[-2][0]:groups[-2][1]])
        if tail < min_chars and head + tail < max_chars - 40:
            groups[-2:] = [(groups[-2][0], groups[-1][1])]
    return groups


def _verses_as_prose(book: str, chapter: int, verses: tuple[tuple[int, str], ...],
                     rng: random.Random) -> str:
    """Verses without their numbers, a few to a paragraph, like a printed book."""
    paragraphs, i = [], 0
    while i < len(verses):
        size = rng.randint(2, 5)
        paragraphs.append(" ".join(text for _, text in verses[i:i + size]))
        i += size
    heading = [f"{book} {chapter}"] if verses[0][0] == 1 else []
    return "\n\n".join(heading + paragraphs)


def read_book(params: Mapping, rng: random.Random) -> Iterator[RawText]:
    """KJV chapters cut into passages of several verses.

    Optional params: `command` ("bible"), `passages_per_chapter` (2).
    """
    max_docs, min_chars, max_chars = reader_limits(params)
    chapters = load_kjv_chapters(params.get("command", "bible"))
    cap = params.get("passages_per_chapter", 2)
    order = list(range(len(chapters)))
    rng.shuffle(order)

    def texts() -> Iterator[RawText]:
        for index in order:
            book, number, verses = chapters[index]
            groups = _verse_groups(verses, min_chars, max_chars, rng)
            for g in sample_passages(groups, cap, rng):
                start, stop = groups[g]
                text = _verses_as_prose(book, number, verses[start:stop], rng)
                if min_chars <= len(text) <= max_chars:
                    span = f"{verses[start][0]}-{verses[stop - 1][0]}"
                    yield RawText("book", f"kjv:{book} {number}:{span}", text)

    return first_n(texts(), max_docs)


# -- code: Python standard library -------------------------------------------------------------
_EXCLUDED_DIRS = {"test", "tests", "idle_test", "site-packages", "dist-packages", "__pycache__"}


@functools.lru_cache(maxsize=2)
def list_stdlib_modules(root: Path) -> tuple[Path, ...]:
    """Non-test .py files of the stdlib, relative to `root`, in a fixed order."""
    if not root.is_dir():
        raise MissingResourceError(f"Python stdlib not found at {root}: apt-get install "
                                   "libpython3.11-stdlib (or pass code.stdlib_dir)")
    modules = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _EXCLUDED_DIRS)
        for name in sorted(files):
            if name.endswith(".py") and not name.startswith("test_"):
                modules.append((Path(folder) / name).relative_to(root))
    return tuple(modules)


def module_chunks(source: str) -> list[tuple[str, str]]:
    """(name, code) of the module header and of each top-level def/class, in file order.

    The header (docstring, imports, constants) is named "<module>". Comment lines directly
    above a def travel with it; top-level code between defs stays with the def before it.
    """
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    starts: list[tuple[int, str]] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
            while first > 0 and lines[first - 1].startswith("#"):
                first -= 1
            starts.append((first, node.name))
    bounds = [(0, "<module>")] + starts
    chunks = []
    for (begin, name), (end, _) in zip(bounds, bounds[1:] + [(len(lines), "")], strict=True):
        code = "".join(lines[begin:end])
        if code.strip():
            chunks.append((name, code))
    return chunks


def read_code(params: Mapping, rng: random.Random) -> Iterator[RawText]:
    """Top-level def/class chunks (and module headers) of Python stdlib modules.

    Optional params: `stdlib_dir` (this interpreter's stdlib), `chunks_per_module` (3).
    """
    max_docs, min_chars, max_chars = reader_limits(params)
    root = Path(params.get("stdlib_dir") or sysconfig.get_paths()["stdlib"])
    modules = list(list_stdlib_modules(root))
    cap = params.get("chunks_per_module", 3)
    rng.shuffle(modules)

    def texts() -> Iterator[RawText]:
        for rel in modules:
            try:
                with tokenize.open(root / rel) as handle:
                    chunks = module_chunks(handle.read())
            except (SyntaxError, UnicodeDecodeError, ValueError, OSError):
                continue
            pieces: list[tuple[str, str]] = []
            for name, code in chunks:
                parts = split_passages(code, min_chars, max_chars)
                detail = f"stdlib:{rel.as_posix()}#{name}"
                pieces.extend((part_detail(detail, i, len(parts)), p) for i, p in enumerate(parts))
            for j in sample_passages([p for _, p in pieces], cap, rng):
                yield RawText("code", pieces[j][0], pieces[j][1])

    return first_n(texts(), max_docs)


# -- docs: Python documentation (reST sources, rendered HTML pages, FAQ) -----------------------
DEFAULT_DOCS_DIR = "/usr/share/doc/python3.11-doc/html"
DOCS_MIX = {"rst": 0.4, "html": 0.35, "faq": 0.25}
_UNDERLINE = re.compile(r"([=\-~^\"'`#*+])\1{2,}")


def faq_pairs(rst: str) -> list[tuple[str, str]]:
    """(question, answer) for every section of a FAQ page whose heading ends with "?"."""
    lines = rst.splitlines()
    headings = [i for i in range(len(lines) - 1)
                if lines[i].strip() and _UNDERLINE.fullmatch(lines[i + 1].strip())
                and len(lines[i + 1].strip()) >= len(lines[i].strip())]
    pairs = []
    for k, i in enumerate(headings):
        end = headings[k + 1] if k + 1 < len(headings) else len(lines)
        question = lines[i].strip()
        answer = "\n".join(lines[i + 2:end]).strip()
        if question.endswith("?") and answer:
            pairs.append((question, answer))
    return pairs


def _docs_pages(docs_dir: Path) -> list[str]:
    sources = docs_dir / "_sources"
    if not sources.is_dir():
        raise MissingResourceError(f"Python docs not found at {docs_dir}: "
                                   "apt-get install python3.11-doc")
    return sorted(p.relative_to(sources).as_posix()[:-len(".rst.txt")]
                  for p in sources.rglob("*.rst.txt"))


def _page_stream(pages: list[str], kind: str, docs_dir: Path, limits: tuple[int, int],
                 cap: int, rng: random.Random) -> Iterator[RawText]:
    """Passages of reST sources (kind "rst") or of HTML pages rendered to text ("html")."""
    for page in pages:
        if kind == "rst":
            path, detail = docs_dir / "_sources" / f"{page}.rst.txt", f"pydocs-rst:{page}.rst"
        else:
            path, detail = docs_dir / f"{page}.html", f"pydocs-html:{page}.html"
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if kind == "html":
            text = render_html(text)
        passages = split_passages(text, *limits)
        for j in sample_passages(passages, cap, rng, keep_first=kind == "html"):
            yield RawText("docs", part_detail(detail, j, len(passages)), passages[j])


def _faq_stream(pages: list[str], docs_dir: Path, limits: tuple[int, int],
                rng: random.Random) -> Iterator[RawText]:
    pairs = []
    for page in pages:
        rst = (docs_dir / "_sources" / f"{page}.rst.txt").read_text(encoding="utf-8")
        pairs.extend((page, q, a) for q, a in faq_pairs(rst))
    rng.shuffle(pairs)
    for page, question, answer in pairs:
        passages = split_passages(f"{question}\n\n{answer}", *limits)
        if passages:  # a long answer keeps its first part, the one under the question
            yield RawText("docs", f"pydocs-faq:{page}.rst#{question}", passages[0])


def read_docs(params: Mapping, rng: random.Random) -> Iterator[RawText]:
    """Python documentation: reST sources, HTML pages with their boilerplate, FAQ Q&A pairs.

    Each page goes to exactly one of the three streams, so no text appears twice. Optional
    params: `docs_dir`, `mix` ({rst: 0.4, html: 0.35, faq: 0.25}), `passages_per_page` (2).
    """
    max_docs, min_chars, max_chars = reader_limits(params)
    docs_dir = Path(params.get("docs_dir", DEFAULT_DOCS_DIR))
    mix = dict(params.get("mix", DOCS_MIX))
    cap = params.get("passages_per_page", 2)
    pages = _docs_pages(docs_dir)
    faq = [p for p in pages if p.startswith("faq/") and p != "faq/index"]
    other = [p for p in pages if not p.startswith("faq/")]
    rng.shuffle(other)
    rst_share = mix.get("rst", 0) / max(mix.get("rst", 0) + mix.get("html", 0), 1e-12)
    draws = [rng.random() for _ in other]
    rst_pages = [p for p, u in zip(other, draws, strict=True) if u < rst_share]
    html_pages = [p for p, u in zip(other, draws, strict=True) if u >= rst_share]
    limits = (min_chars, max_chars)
    streams = {
        "rst": _page_stream(rst_pages, "rst", docs_dir, limits, cap, child_rng(rng)),
        "html": _page_stream(html_pages, "html", docs_dir, limits, cap, child_rng(rng)),
        "faq": _faq_stream(faq, docs_dir, limits, child_rng(rng)),
    }
    return iter(take_mixed(streams, mix, max_docs, rng))


SOURCE_READERS: dict[str, Reader] = {
    "wikipedia": read_wikipedia,
    "book": read_book,
    "code": read_code,
    "docs": read_docs,
    "web": read_web,
}
