"""The web stratum: a mixed, noisy stand-in for CommonCrawl built from what Debian ships.

Components (keys of the `mix` param, weights normalised):
  fortune       fortune cookies, ascii-art ones over-sampled (`art_fraction`)  deb fortunes
  gcide         raw GCIDE dictionary entries with their markup                 deb dict-gcide
  changelog     the newest entries of Debian/upstream changelogs                /usr/share/doc
  man           man pages rendered with `man -l FILE | col -bx` (capped)      deb man-db
  foreign_wiki  French and Spanish Wikipedia leads                             pip ovos-skill-...

Changelogs and man pages are read only from the packages named in `packages` (default
DEFAULT_WEB_PACKAGES), and fortunes only from the files of `fortune_packages`, found through
dpkg's file lists: installing anything else (test extras, a cluster's tools) leaves the corpus
unchanged. The build records the packages' versions and a checksum of what was read
(selectlab.corpus.inputs).
"""

from __future__ import annotations

import functools
import gzip
import os
import random
import re
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from selectlab.corpus.debian import owned_files
from selectlab.corpus.passages import (
    MissingResourceError,
    RawText,
    child_rng,
    part_detail,
    reader_limits,
    sample_passages,
    split_passages,
    take_mixed,
)
from selectlab.corpus.wiki import is_donor_title, language_tag, lead_text, load_wikipedia_leads

DEFAULT_WEB_MIX = {"fortune": 0.25, "gcide": 0.2, "changelog": 0.15, "man": 0.15,
                   "foreign_wiki": 0.25}
DEFAULT_FORTUNE_DIR = "/usr/share/games/fortunes"
ASCII_ART_FILE = "ascii-art"
ART_SYMBOL_SHARE = 0.3  # fortunes this full of punctuation are pictures (or line noise)
DEFAULT_GCIDE = "/usr/share/dictd/gcide"  # + ".dict.dz" and ".index"
DEFAULT_DOC_ROOT = "/usr/share/doc"
DEFAULT_MAN_ROOT = "/usr/share/man"
MAN_BATCH = 8  # pages rendered concurrently; a page costs ~0.05-0.1 s of man + col
# Whose changelogs and man pages the web stratum reads: packages of Debian's and Ubuntu's
# minimal systems plus those scripts/bootstrap.sh installs, so every machine that runs the
# embedded default has them.
DEFAULT_WEB_PACKAGES = (
    "apt", "base-files", "base-passwd", "bash", "bible-kjv", "bsdextrautils", "bsdutils",
    "coreutils", "dash", "debconf", "debianutils", "dict-gcide", "diffutils", "dpkg",
    "findutils", "fortunes", "grep", "gzip", "hostname", "libc-bin", "login", "man-db", "mawk",
    "mount", "ncurses-bin", "passwd", "perl-base", "sed", "sensible-utils", "tar", "util-linux",
)
DEFAULT_FORTUNE_PACKAGES = ("fortunes", "fortunes-min")
# The tools that render man pages: their versions shape the text too.
MAN_TOOL_PACKAGES = ("man-db", "groff-base", "bsdextrautils")

Limits = tuple[int, int]


# -- fortunes ----------------------------------------------------------------------------------
def fortune_files(fortune_dir: str, packages: tuple[str, ...]) -> list[Path]:
    """The fortune files (without .dat/.u8 companions): in the Debian directory those of
    `packages`; in a directory the config names, all of them."""
    folder = Path(fortune_dir)
    if not folder.is_dir():
        return []
    if folder == Path(DEFAULT_FORTUNE_DIR):
        candidates = owned_files(packages, rf"^{re.escape(DEFAULT_FORTUNE_DIR)}/[^/.]+$")
    else:
        candidates = sorted(folder.glob("*"))
    return [p for p in candidates if p.is_file() and not p.is_symlink() and "." not in p.name]


@functools.lru_cache(maxsize=2)
def load_fortunes(fortune_dir: str, packages: tuple[str, ...] = DEFAULT_FORTUNE_PACKAGES
                  ) -> tuple[tuple[str, int, str], ...]:
    """(file, entry number, text) of every distinct fortune; overstrike sequences removed.

    Some fortunes appear in several files; only the first copy is kept, so one text cannot
    land in both the training and the held-out documents.
    """
    files = fortune_files(fortune_dir, packages)
    entries, seen = [], set()
    for path in files:
        raw = path.read_bytes().decode("utf-8", errors="replace")
        raw = re.sub(r".\x08", "", raw)  # "x\bx" bold / "_\bx" underline from old terminals
        for number, text in enumerate(re.split(r"^%[ \t]*$", raw, flags=re.M)):
            key = " ".join(text.split())
            if key and key not in seen:
                seen.add(key)
                entries.append((path.name, number, text.strip("\n")))
    if not entries:
        raise MissingResourceError(f"no fortunes under {fortune_dir}: apt-get install fortunes")
    return tuple(entries)


def is_ascii_art(file_name: str, text: str) -> bool:
    visible = [c for c in text if not c.isspace()]
    symbols = sum(not c.isalnum() for c in visible)
    return file_name == ASCII_ART_FILE or symbols >= ART_SYMBOL_SHARE * max(len(visible), 1)


def _fortune_stream(params: Mapping, limits: Limits, rng: random.Random) -> Iterator[RawText]:
    entries = load_fortunes(str(params.get("fortune_dir", DEFAULT_FORTUNE_DIR)),
                            tuple(params.get("fortune_packages", DEFAULT_FORTUNE_PACKAGES)))
    art_fraction = float(params.get("art_fraction", 0.05))
    art_flags = [is_ascii_art(name, text) for name, _, text in entries]
    art = [i for i, flag in enumerate(art_flags) if flag]
    other = [i for i, flag in enumerate(art_flags) if not flag]
    rng.shuffle(art)
    rng.shuffle(other)
    while art or other:
        use_art = bool(art) and (not other or rng.random() < art_fraction)
        name, number, text = entries[(art if use_art else other).pop()]
        passages = split_passages(text, *limits)
        if passages:
            yield RawText("web", f"fortune:{name}#{number}", passages[0])


# -- GCIDE dictionary --------------------------------------------------------------------------
_DICTD_DIGITS = {c: i for i, c in enumerate(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")}


def dictd_number(code: str) -> int:
    """Decode the base-64 numbers of a dictd .index file."""
    value = 0
    for char in code:
        value = value * 64 + _DICTD_DIGITS[char]
    return value


@functools.lru_cache(maxsize=2)
def load_gcide_index(index_path: str) -> tuple[tuple[str, int, int], ...]:
    """(headword, offset, length) per distinct entry; headwords sharing an entry keep the first."""
    if not Path(index_path).is_file():
        raise MissingResourceError(f"GCIDE index {index_path} missing: apt-get install dict-gcide")
    entries, seen = [], set()
    with open(index_path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3 or parts[0].startswith("00-"):  # 00-*: database metadata
                continue
            span = (dictd_number(parts[1]), dictd_number(parts[2]))
            if span not in seen:
                seen.add(span)
                entries.append((parts[0], *span))
    return tuple(entries)


@functools.lru_cache(maxsize=1)
def gcide_bytes(dict_path: str) -> bytes:
    # dictzip is gzip with a seek table; one sequential gunzip (~0.2 s) is cheaper than seeking.
    if not Path(dict_path).is_file():
        raise MissingResourceError(f"GCIDE data {dict_path} missing: apt-get install dict-gcide")
    with gzip.open(dict_path, "rb") as handle:
        return handle.read()


def _gcide_stream(params: Mapping, limits: Limits, rng: random.Random) -> Iterator[RawText]:
    base = str(params.get("gcide_path", DEFAULT_GCIDE))
    index = load_gcide_index(base + ".index")
    order = list(range(len(index)))
    rng.shuffle(order)
    data = gcide_bytes(base + ".dict.dz")
    for i in order:
        headword, offset, length = index[i]
        text = data[offset:offset + length].decode("utf-8", errors="replace")
        passages = split_passages(text, *limits)
        if passages:
            yield RawText("web", f"gcide:{headword}", passages[0])


# -- Debian changelogs -------------------------------------------------------------------------
@functools.lru_cache(maxsize=2)
def list_changelogs(doc_root: str, packages: tuple[str, ...] = DEFAULT_WEB_PACKAGES
                    ) -> tuple[Path, ...]:
    """Distinct changelog*.gz files of `packages` under <doc_root>/<package>/, sorted."""
    paths, seen = [], set()
    pattern = rf"^{re.escape(doc_root.rstrip('/'))}/[^/]+/changelog[^/]*\.gz$"
    for path in owned_files(packages, pattern):
        real = path.resolve()
        if real not in seen:
            seen.add(real)
            paths.append(path)
    if not paths:
        raise MissingResourceError(f"no changelogs of {list(packages)} under {doc_root}: "
                                   "install them without excluding /usr/share/doc in dpkg")
    return tuple(paths)


def web_packages(params: Mapping) -> tuple[str, ...]:
    return tuple(params.get("packages", DEFAULT_WEB_PACKAGES))


def _changelog_stream(params: Mapping, limits: Limits, rng: random.Random) -> Iterator[RawText]:
    files = list(list_changelogs(str(params.get("doc_root", DEFAULT_DOC_ROOT)),
                                 web_packages(params)))
    cap = int(params.get("changelog_passages_per_file", 1))
    rng.shuffle(files)
    head_chars = limits[1] * (cap + 2)  # only the newest entries are read
    for path in files:
        with gzip.open(path, "rt", encoding="utf-8", errors="replace") as handle:
            head = handle.read(head_chars + 1)
        passages = split_passages(head[:head_chars], *limits)
        if len(head) > head_chars:
            passages = passages[:-1]  # the last one may stop mid-entry
        for j in range(min(cap, len(passages))):
            suffix = f"#{j + 1}" if j else ""
            yield RawText("web", f"changelog:{path.parent.name}/{path.name}{suffix}", passages[j])


# -- man pages ---------------------------------------------------------------------------------
@functools.lru_cache(maxsize=2)
def list_man_pages(man_root: str, packages: tuple[str, ...] = DEFAULT_WEB_PACKAGES
                   ) -> tuple[Path, ...]:
    """English man pages (sections 1-9) of `packages`, skipping symlinks and `.so` stubs."""
    pattern = rf"^{re.escape(man_root.rstrip('/'))}/man[1-9]/[^/]+$"
    pages = [p for p in owned_files(packages, pattern) if p.stat().st_size >= 200]
    if not pages:
        raise MissingResourceError(f"no man pages of {list(packages)} under {man_root}: "
                                   "apt-get install man-db (and do not exclude /usr/share/man "
                                   "in dpkg)")
    return tuple(pages)


def _man_tools() -> tuple[str, str]:
    man, col = shutil.which("man"), shutil.which("col")
    if man is None:
        raise MissingResourceError("`man` not found: apt-get install man-db")
    if col is None:
        raise MissingResourceError("`col` not found: apt-get install bsdextrautils")
    return man, col


def render_man_page(path: Path, tools: tuple[str, str] | None = None) -> str:
    """A man page as plain text, 80 columns, no hyphenation or justification."""
    man, col = tools or _man_tools()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
           "LC_ALL": "C.UTF-8", "MANWIDTH": "80", "MANPAGER": "cat", "PAGER": "cat"}
    rendered = subprocess.run([man, "-l", "--nh", "--nj", str(path)], capture_output=True,
                              env=env, timeout=60, check=False)
    plain = subprocess.run([col, "-bx"], input=rendered.stdout, capture_output=True, env=env,
                           timeout=60, check=False)
    return plain.stdout.decode("utf-8", errors="replace")


def _diverse_order(pages: tuple[Path, ...], rng: random.Random, count: int) -> list[Path]:
    """Pages shuffled so that families (the name up to its first "_" or ".") take turns.

    One big family can dwarf the rest (e.g. 16k `gcloud_*` pages where the Google Cloud CLI is
    installed); taking one page per family per round keeps the stratum varied.
    """
    families: dict[str, list[Path]] = {}
    for page in pages:
        families.setdefault(re.split(r"[_.]", page.name)[0], []).append(page)
    groups = [families[name] for name in sorted(families)]
    for group in groups:
        rng.shuffle(group)
    rng.shuffle(groups)
    order: list[Path] = []
    turn = 0
    while groups and len(order) < count:
        order.extend(group[turn] for group in groups)
        turn += 1
        groups = [group for group in groups if turn < len(group)]
    return order[:count]


def _man_stream(params: Mapping, limits: Limits, rng: random.Random) -> Iterator[RawText]:
    pages = list_man_pages(str(params.get("man_root", DEFAULT_MAN_ROOT)), web_packages(params))
    tools = _man_tools()
    pages = _diverse_order(pages, rng, int(params.get("max_man_pages", 150)))
    cap = int(params.get("man_passages_per_page", 2))
    for start in range(0, len(pages), MAN_BATCH):
        batch = pages[start:start + MAN_BATCH]
        with ThreadPoolExecutor(max_workers=4) as pool:
            texts = list(pool.map(lambda p: render_man_page(p, tools), batch))
        for path, text in zip(batch, texts, strict=True):
            passages = split_passages(text, *limits)
            name = path.name.removesuffix(".gz")
            for j in sample_passages(passages, cap, rng, keep_first=True):
                yield RawText("web", part_detail(f"man:{name}", j, len(passages)), passages[j])


# -- French and Spanish Wikipedia --------------------------------------------------------------
def _foreign_wiki_stream(params: Mapping, limits: Limits,
                         rng: random.Random) -> Iterator[RawText]:
    languages = list(params.get("foreign_languages", ["fr-fr", "es-es"]))
    leads = {lang: load_wikipedia_leads(lang, params.get("wiki_data_dir")) for lang in languages}
    pool = [(lang, i) for lang in languages for i, (title, _) in enumerate(leads[lang])
            if not is_donor_title(title)]
    rng.shuffle(pool)
    for lang, i in pool:
        title, extract = leads[lang][i]
        passages = split_passages(lead_text(title, extract), *limits)
        if passages:
            yield RawText("web", f"wikipedia:{language_tag(lang)}:{title}", passages[0])


WEB_STREAMS = {
    "fortune": _fortune_stream,
    "gcide": _gcide_stream,
    "changelog": _changelog_stream,
    "man": _man_stream,
    "foreign_wiki": _foreign_wiki_stream,
}


def read_web(params: Mapping, rng: random.Random) -> Iterator[RawText]:
    """A shuffled mix of fortunes, dictionary entries, changelogs, man pages and foreign leads.

    Optional params: `mix` (weights per component, default DEFAULT_WEB_MIX), `fortune_dir`,
    `fortune_packages`, `art_fraction` (0.05), `gcide_path`, `packages` (whose changelogs and
    man pages are read), `doc_root`, `changelog_passages_per_file` (1), `man_root`,
    `max_man_pages` (150), `man_passages_per_page` (2), `foreign_languages`
    (["fr-fr", "es-es"]), `wiki_data_dir`. Components with weight 0 are never read.
    """
    max_docs, min_chars, max_chars = reader_limits(params)
    mix = dict(params.get("mix", DEFAULT_WEB_MIX))
    limits = (min_chars, max_chars)
    # Each component gets its own generator (drawn in a fixed order), so changing one
    # component's weight does not reshuffle the texts another component yields.
    streams = {name: make(params, limits, child_rng(rng))
               for name, make in WEB_STREAMS.items()}
    return iter(take_mixed(streams, mix, max_docs, rng))
