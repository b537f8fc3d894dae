"""Corpus readers: real text of the right kind, limits respected, same seed -> same texts."""

from __future__ import annotations

import ast
import random
import re
from collections import Counter

import pytest

from selectlab.corpus.htmltext import render_html
from selectlab.corpus.passages import distinct, mix_quotas, split_passages
from selectlab.corpus.sources import (
    SOURCE_READERS,
    MissingResourceError,
    RawText,
    faq_pairs,
    module_chunks,
    read_book,
    read_docs,
    read_web,
)
from selectlab.corpus.web_sources import dictd_number, is_ascii_art

LIMITS = {"max_docs": 12, "min_chars": 200, "max_chars": 1500}
PREFIXES = {
    "wikipedia": ("wikipedia:en:",),
    "book": ("kjv:",),
    "code": ("stdlib:",),
    "docs": ("pydocs-rst:", "pydocs-html:", "pydocs-faq:"),
    "web": ("fortune:", "gcide:", "changelog:", "man:", "wikipedia:fr:", "wikipedia:es:"),
}
WEB_SMALL = {"max_man_pages": 6}


def read(key: str, seed: int = 0, **params) -> list[RawText]:
    merged = {**LIMITS, **(WEB_SMALL if key == "web" else {}), **params}
    try:
        return list(SOURCE_READERS[key](merged, random.Random(seed)))
    except MissingResourceError as missing:  # machines without the offline packages
        pytest.skip(str(missing))


@pytest.mark.parametrize("key", sorted(PREFIXES))
def test_reader_respects_limits_and_names_its_texts(key):
    texts = read(key)
    assert len(texts) == LIMITS["max_docs"]
    for text in texts:
        assert text.source == key
        assert text.detail.startswith(PREFIXES[key]), text.detail
        assert LIMITS["min_chars"] <= len(text.text) <= LIMITS["max_chars"], text.detail
        assert text.text == text.text.strip("\n")
    assert len({t.detail for t in texts}) == len(texts)
    assert len({" ".join(t.text.split()) for t in texts}) == len(texts)


def test_distinct_drops_repeated_texts():
    texts = [RawText("code", f"stdlib:m{i}.py#Codec", "class Codec:\n    pass\n") for i in range(3)]
    texts.append(RawText("code", "stdlib:x.py#f", "def f():\n    pass"))
    assert [t.detail for t in distinct(texts)] == ["stdlib:m0.py#Codec", "stdlib:x.py#f"]
    many = read("code", max_docs=300, min_chars=100)
    assert len({" ".join(t.text.split()) for t in many}) == 300


@pytest.mark.parametrize("key", sorted(PREFIXES))
def test_reader_is_deterministic(key):
    first, again, other = read(key, seed=3), read(key, seed=3), read(key, seed=4)
    assert first == again
    assert [t.detail for t in first] != [t.detail for t in other]


@pytest.mark.parametrize("key", sorted(PREFIXES))
def test_max_docs_zero_yields_nothing(key):
    assert read(key, max_docs=0) == []


def test_wikipedia_texts_start_with_their_title():
    for text in read("wikipedia", max_docs=20):
        title = text.detail.removeprefix("wikipedia:en:")
        assert text.text.split("\n")[0] == title
        assert len(text.text.split()) > 30


def test_book_passages_are_consecutive_verses_of_prose():
    for text in read("book", max_docs=20, min_chars=300, max_chars=3000):
        match = re.fullmatch(r"kjv:(.+) (\d+):(\d+)-(\d+)", text.detail)
        assert match, text.detail
        first, last = int(match.group(3)), int(match.group(4))
        assert 1 <= first <= last
        heading = f"{match.group(1)} {match.group(2)}\n\n"
        assert text.text.startswith(heading) == (first == 1)  # chapter heading before verse 1
        body = text.text.removeprefix(heading)
        assert not re.search(r"^\s*\d+ [A-Z]", body, flags=re.M)  # verse numbers removed
    counts = Counter(t.detail.split(" ")[0] for t in read("book", max_docs=200))
    assert len(counts) > 20  # drawn from across the whole Bible


def test_code_chunks_are_whole_top_level_definitions():
    texts = read("code", max_docs=40, min_chars=100, max_chars=4000)
    whole = [t for t in texts if not t.detail.endswith("]")]
    assert len(whole) > 20
    for text in whole:
        name = text.detail.split("#", 1)[1]
        ast.parse(text.text)  # a whole chunk is valid Python on its own
        if name != "<module>":
            assert re.search(rf"^(async def|def|class) {re.escape(name)}\b", text.text, re.M)
    assert not any("/test/" in t.detail or "/tests/" in t.detail or "test_" in t.detail
                   for t in texts)


def test_module_chunks_split_at_top_level_defs():
    source = '"""Doc."""\nimport os\n\n# helper\n@decorate\ndef f():\n    return 1\n\n' \
             'X = 2\n\nclass C:\n    def m(self):\n        pass\n'
    chunks = module_chunks(source)
    assert [name for name, _ in chunks] == ["<module>", "f", "C"]
    assert chunks[1][1].startswith("# helper\n@decorate\ndef f")
    assert "X = 2" in chunks[1][1]
    assert "".join(code for _, code in chunks) == source


def test_docs_html_pages_keep_their_boilerplate():
    texts = read("docs", max_docs=10, mix={"html": 1}, max_chars=3000)
    assert all(t.detail.startswith("pydocs-html:") for t in texts)
    heads = [t for t in texts if "[" not in t.detail or "[1/" in t.detail]
    assert heads and all("Python 3.11" in t.text and "documentation" in t.text for t in heads)
    boilerplate = [t for t in texts if "index modules | next | previous" in t.text
                   or "Navigation" in t.text]
    assert len(boilerplate) >= len(texts) // 2


def test_docs_faq_texts_are_question_answer_pairs():
    texts = read("docs", max_docs=15, mix={"faq": 1})
    for text in texts:
        question = text.text.split("\n")[0]
        assert question.endswith("?") and text.detail.endswith("#" + question)
        assert len(text.text) > len(question) + 50


def test_docs_streams_never_share_a_page():
    texts = read("docs", max_docs=150, min_chars=100, max_chars=3000)
    kinds = Counter(t.detail.split(":")[0] for t in texts)
    assert set(kinds) == {"pydocs-rst", "pydocs-html", "pydocs-faq"}
    pages: dict[str, set[str]] = {}
    for t in texts:
        page = re.sub(r"\.(rst|html)(\[.*\])?(#.*)?$", "", t.detail.split(":", 1)[1])
        pages.setdefault(page, set()).add(t.detail.split(":")[0])
    assert all(len(kinds) == 1 for kinds in pages.values())


def test_web_mix_follows_the_weights():
    texts = read("web", max_docs=40)
    kinds = Counter(t.detail.split(":")[0] for t in texts)
    foreign = kinds.pop("wikipedia")
    assert kinds == {"fortune": 10, "gcide": 8, "changelog": 6, "man": 6}
    assert foreign == 10
    assert {t.detail.split(":")[1] for t in texts if t.detail.startswith("wikipedia")} <= {"fr",
                                                                                           "es"}


@pytest.mark.parametrize("component,prefix,marker", [
    ("fortune", "fortune:", None),
    ("gcide", "gcide:", "[1913 Webster]|WordNet|\\\\"),
    ("changelog", "changelog:", r"\d"),
    ("man", "man:", r"\n {7}\S"),  # man's body indentation
    ("foreign_wiki", "wikipedia:", r" (le|la|les|de|el|los|en) "),
])
def test_web_components_yield_their_kind(component, prefix, marker):
    texts = read("web", max_docs=8, min_chars=100, mix={component: 1})
    assert len(texts) == 8
    for text in texts:
        assert text.detail.startswith(prefix)
    if marker:
        assert sum(bool(re.search(marker, t.text)) for t in texts) >= 6
    if component == "man":  # a page's first passage carries its header and NAME section
        heads = [t for t in texts if "[" not in t.detail or "[1/" in t.detail]
        assert heads and all("NAME" in t.text for t in heads)


def test_web_fortunes_include_ascii_art_when_asked():
    texts = read("web", max_docs=8, min_chars=100, mix={"fortune": 1}, art_fraction=1.0)
    assert all(is_ascii_art(t.detail.split(":")[1].split("#")[0], t.text) for t in texts)
    assert any(t.detail.startswith("fortune:ascii-art#") for t in texts)
    assert not is_ascii_art("humorists", "A plain sentence, with words only.")


def test_gcide_index_numbers_decode():
    assert dictd_number("A") == 0 and dictd_number("B") == 1 and dictd_number("BA") == 64
    assert dictd_number("+8") == 62 * 64 + 60


def test_missing_resources_name_the_package(tmp_path):
    params = {**LIMITS}
    with pytest.raises(MissingResourceError, match="apt-get install bible-kjv"):
        list(read_book({**params, "command": "no-such-bible-decoder"}, random.Random(0)))
    with pytest.raises(MissingResourceError, match="python3.11-doc"):
        list(read_docs({**params, "docs_dir": str(tmp_path)}, random.Random(0)))
    with pytest.raises(MissingResourceError, match="dict-gcide"):
        list(read_web({**params, "mix": {"gcide": 1}, "gcide_path": str(tmp_path / "x")},
                      random.Random(0)))
    with pytest.raises(MissingResourceError, match="apt-get install fortunes"):
        list(read_web({**params, "mix": {"fortune": 1}, "fortune_dir": str(tmp_path)},
                      random.Random(0)))


def test_reader_limits_are_checked():
    with pytest.raises(ValueError, match="max_chars"):
        list(read_book({"max_docs": 3, "min_chars": 10}, random.Random(0)))
    with pytest.raises(ValueError, match="min_chars"):
        list(read_book({"max_docs": 3, "min_chars": 500, "max_chars": 100}, random.Random(0)))


def test_split_passages_never_cuts_words_and_respects_limits():
    words = [f"word{i}" for i in range(400)]
    text = "\n\n".join(" ".join(words[i:i + 40]) + "." for i in range(0, 400, 40))
    passages = split_passages(text, 1, 300)
    assert all(len(p) <= 300 for p in passages)
    assert " ".join(passages).split() == text.split()  # no word lost or cut
    assert all(len(p) >= 250 for p in split_passages(text, 250, 300))
    long_line = " ".join(words)  # one paragraph, one line, no sentence ends: falls to words
    parts = split_passages(long_line, 10, 120)
    assert all(len(p) <= 120 for p in parts) and " ".join(parts).split() == words
    assert split_passages("tiny", 10, 100) == []


def test_mix_quotas_sum_to_total():
    assert mix_quotas({"a": 0.25, "b": 0.2, "c": 0.15, "d": 0.15, "e": 0.25}, 40) == \
        {"a": 10, "b": 8, "c": 6, "d": 6, "e": 10}
    assert sum(mix_quotas({"a": 1, "b": 1, "c": 1}, 10).values()) == 10
    with pytest.raises(ValueError):
        mix_quotas({"a": 0}, 5)


def test_faq_pairs_take_question_sections():
    rst = "Title\n=====\n\nIntro.\n\nWhy is it so?\n-------------\n\nBecause.\n\nNot a q\n" \
          "-------\n\nText.\n"
    assert faq_pairs(rst) == [("Why is it so?", "Because.")]


def test_render_html_keeps_visible_text_and_drops_scripts():
    html = ("<html><head><title>Page &amp; title</title><style>p{}</style></head><body>"
            "<div class='related'><h3>Navigation</h3><ul><li>index</li><li>next |</li></ul>"
            "</div><script>var x = 1;</script><h1>Heading</h1><p>Some   text\nhere.</p>"
            "<pre>  indented\n    code</pre><div class='footer'>&copy; 2024</div></body></html>")
    text = render_html(html)
    assert text.startswith("Page & title\n")
    assert "index next |" in text and "Navigation" in text
    assert "var x" not in text and "p{}" not in text
    assert "Some text here." in text
    assert "  indented\n    code" in text
    assert text.rstrip().endswith("© 2024")
