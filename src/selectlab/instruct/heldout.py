"""Keeping the offline instruction set off the text the embedded corpus is made of.

The corpus builder draws a few hundred GCIDE entries, man pages and stdlib chunks out of the
same resources the instruction pairs come from. A pair is held out from the corpus when
(1) the text it was built from was not drawn at all: its key (`Pair.key`, the builder's
`source_detail` spelling) is no document's `source_detail`, with passage suffixes ("[2/3]")
ignored; and (2) its response does not occur, case and white space aside, inside any corpus
document (training shards and held-out splits alike), which also catches a definition or
docstring quoted by some other document. Both checks are exact and deterministic: the same
corpus and resources always keep the same pairs, and the instruction set's record says how
many each check removed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from selectlab.shards import Document

_PART_SUFFIX = re.compile(r"\[\d+/\d+\]$")


def normalise(text: str) -> str:
    return " ".join(text.lower().split())


def detail_key(source_detail: str) -> str:
    """"man:ls.1[2/3]" -> "man:ls.1": every passage of a text stands for the whole text."""
    return _PART_SUFFIX.sub("", source_detail)


class CorpusText:
    """The keys and the normalised text of every document of the corpus."""

    def __init__(self, documents: Iterable[Document]):
        keys, texts = set(), []
        for document in documents:
            keys.add(detail_key(document.source_detail))
            texts.append(normalise(document.text))
        self.keys = frozenset(keys)
        # One string with a separator no normalised text contains, so a match cannot span two
        # documents.
        self.text = "\x00".join(texts)
        self.documents = len(texts)

    def drew(self, key: str) -> bool:
        return key in self.keys

    def contains(self, text: str) -> bool:
        needle = normalise(text)
        return bool(needle) and needle in self.text
