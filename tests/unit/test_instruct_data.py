"""The instruction set: offline pairs, kept off the corpus, split once; and ShareGPT's pairs."""

from __future__ import annotations

import ast
import gzip
import json
import random
from pathlib import Path

import pytest

from selectlab.instruct import embedded
from selectlab.instruct.data import build_instruction_set, instruction_id
from selectlab.instruct.heldout import CorpusText, detail_key
from selectlab.instruct.sharegpt import sharegpt_pairs
from selectlab.shards import Document

DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
TEMPLATE = {"prompt": "### Instruction:\n{instruction}\n\n### Response:\n"}

APPLE = """Apple \\Ap"ple\\ ([a^]p"p'l), n. [OE. appel, eppel, AS. [ae]ppel,
   [ae]pl; akin to Fries. & D. appel; of
   unknown origin.]
   1. The fleshy pome or fruit of a rosaceous tree ({Pyrus
      malus}) cultivated in numberless varieties.
      [1913 Webster]

   2. (bot.) Any tree of the genus {Pyrus}.
      [1913 Webster]
"""
CLICK = """Click \\Click\\ (kl[i^]k), v. i. [imp. & p. p. {Clicked}
   (kl[i^]kt); p. pr. & vb. n. {Clicking}.] [Prob. an
   onomatopoetic word. {See Clack}.]
   To make a slight, sharp noise, as by gentle striking; to tick.
   [1913 Webster]

         The varnished clock that clicked behind the door.
                                                  --Goldsmith.
"""
PUTELI = """Patela \\Pat"e*la\\, n. [Hind. patel[=a].]
   A large flat-bottomed trading boat peculiar to the river
   Ganges; -- called also {puteli}.
   [1913 Webster]
"""
SEE = """Abaca \\Ab"a*ca\\, n.
   See {Manila hemp}.
   [1913 Webster]
"""


def dictd_code(number: int) -> str:
    digits = ""
    while True:
        number, rest = divmod(number, 64)
        digits = DIGITS[rest] + digits
        if number == 0:
            return digits


def write_gcide(base: Path, entries: dict[str, str], aliases: dict[str, str] = ()) -> None:
    data, lines = b"", []
    spans = {}
    for headword, text in entries.items():
        raw = text.encode()
        spans[headword] = (len(data), len(raw))
        data += raw
    for headword, span in [*spans.items(), *((a, spans[t]) for a, t in dict(aliases).items())]:
        lines.append(f"{headword}\t{dictd_code(span[0])}\t{dictd_code(span[1])}")
    Path(f"{base}.index").write_text("\n".join(sorted(lines)) + "\n")
    with gzip.open(f"{base}.dict.dz", "wb") as handle:
        handle.write(data)


def test_gcide_definitions_skip_the_header_and_stop_at_the_first_sense():
    assert embedded.gcide_definition(APPLE) == (
        "Apple", "The fleshy pome or fruit of a rosaceous tree (Pyrus malus) cultivated in "
        "numberless varieties.")
    assert embedded.gcide_definition(CLICK) == (
        "Click", "To make a slight, sharp noise, as by gentle striking; to tick.")
    assert embedded.gcide_definition(PUTELI)[1] == (
        "A large flat-bottomed trading boat peculiar to the river Ganges; -- called also puteli.")
    assert embedded.gcide_definition(SEE) is None  # only points elsewhere


def test_dictionary_pairs_ask_for_the_entry_of_the_headword_itself(tmp_path):
    write_gcide(tmp_path / "gcide", {"Apple": APPLE, "Click": CLICK, "Abaca": SEE},
                aliases={"Clicking": "Click"})
    pairs = list(embedded.dictionary_pairs({"gcide_path": str(tmp_path / "gcide")},
                                           random.Random(0)))
    assert sorted(p.key for p in pairs) == ["gcide:Apple", "gcide:Click"]  # no alias, no "See"
    click = next(p for p in pairs if p.key == "gcide:Click")
    assert '"click"' in click.instruction and click.response.startswith("To make a slight")


def test_man_summaries_of_man_and_mdoc_pages():
    man = '.TH LS 1\n.SH NAME\nls \\- list directory contents\n.SH SYNOPSIS\n.B ls\n'
    mdoc = '.Dd 2020\n.Sh NAME\n.Nm ssh\n.Nd OpenSSH remote login client\n.Sh SYNOPSIS\n'
    fonts = '.SH "NAME"\n\\fBgrep\\fR, egrep \\- print lines that match\npatterns\n.SH X\n'
    assert embedded.man_summary(man) == "List directory contents."
    assert embedded.man_summary(mdoc) == "OpenSSH remote login client."
    assert embedded.man_summary(fonts) == "Print lines that match patterns."
    assert embedded.man_summary(".SH NAME\nfoo\n.SH X\n") is None  # no " - " summary


def test_man_pairs_name_the_page_and_its_section(tmp_path):
    for section, name, summary in (("1", "ls", "list directory contents"),
                                   ("3", "strlen", "calculate the length of a string"),
                                   ("5", "hosts", "static table lookup for hostnames")):
        folder = tmp_path / f"man{section}"
        folder.mkdir(exist_ok=True)
        with gzip.open(folder / f"{name}.{section}.gz", "wt") as handle:
            handle.write(f".TH X {section}\n.SH NAME\n{name} \\- {summary}\n.SH DESCRIPTION\n")
    pairs = {p.key: p for p in embedded.man_pairs({"man_root": str(tmp_path)}, random.Random(1))}
    assert set(pairs) == {"man:ls.1", "man:strlen.3", "man:hosts.5"}
    assert pairs["man:ls.1"].instruction == "What does the command `ls` do?"
    assert pairs["man:strlen.3"].instruction == "What does the library function `strlen` do?"
    assert pairs["man:hosts.5"].response == "Static table lookup for hostnames."


MODULE = '''
"""A module."""


def dedent(text, keep=False):
    """Remove common leading whitespace from every line of text.

    More detail here.
    """


def _private():
    """Hidden."""


def listing():
    """Options:"""


class Wrapper:
    def fill(self, text, *, width=70):
        """Wrap a paragraph into lines. Then return them joined."""
'''


def test_python_pairs_use_the_first_sentence_of_public_docstrings(tmp_path):
    (tmp_path / "textwrap2.py").write_text(MODULE)
    pairs = {p.instruction: p for p in embedded.python_pairs({"stdlib_dir": str(tmp_path)},
                                                             random.Random(0))}
    assert set(pairs) == {
        "What does the Python function `textwrap2.dedent(text, keep=False)` do?",
        "What does the method `Wrapper.fill(text, *, width=70)` of Python's `textwrap2` "
        "module do?"}
    fill = pairs["What does the method `Wrapper.fill(text, *, width=70)` of Python's "
                 "`textwrap2` module do?"]
    # A method's text is drawn by the corpus with its class, so its key names the class.
    assert (fill.key, fill.response) == ("stdlib:textwrap2.py#Wrapper", "Wrap a paragraph into "
                                         "lines.")
    tree = ast.parse(MODULE)
    assert embedded.docstring_summary(tree.body[3]) is None  # a lead-in to a list


def test_corpus_text_matches_keys_of_any_passage_and_text_up_to_case_and_spaces():
    corpus = CorpusText([Document("d1", "Some TEXT\n with   Spaces.", "web", "man:ls.1[2/3]"),
                         Document("d2", "other", "web", "gcide:Apple")])
    assert detail_key("man:ls.1[2/3]") == "man:ls.1"
    assert corpus.drew("man:ls.1") and corpus.drew("gcide:Apple") and not corpus.drew("man:cp.1")
    assert corpus.contains("text with spaces") and not corpus.contains("spaces. other")
    assert not corpus.contains("   ")


@pytest.fixture
def resources(tmp_path) -> dict:
    words = [f"term{a}{b}" for a in "abcdef" for b in "abcde"]
    entries = {w.title(): f"{w.title()} \\{w}\\, n.\n   A thing of the kind called {w} in "
               f"the test dictionary.\n   [1913 Webster]\n" for w in words}
    write_gcide(tmp_path / "gcide", entries)
    man = tmp_path / "man" / "man1"
    man.mkdir(parents=True)
    for i in range(30):
        (man / f"tool{i}.1").write_text(f".SH NAME\ntool{i} \\- run the test tool number "
                                        f"{i}\n.SH X\n")
    return {"gcide_path": str(tmp_path / "gcide"), "man_root": str(tmp_path / "man")}


def params(resources: dict, **changes) -> dict:
    return {"kind": "embedded", "seed": 3, "train_pairs": 30, "eval_instructions": 10,
            "mix": {"dictionary": 0.5, "man": 0.5}, "resources": resources, "limits": {},
            "chat_template": TEMPLATE, "max_prompt_tokens": 64} | changes


def test_embedded_set_stays_off_the_corpus_and_splits_once(resources, tiny_tokenizer_dir):
    from selectlab.tokens import load_tokenizer

    tokenizer = load_tokenizer(tiny_tokenizer_dir)
    # The corpus drew man page tool3 and quotes Word7's definition inside another document.
    corpus = CorpusText([
        Document("a", "tool3 - run the test tool number 3", "web", "man:tool3.1[1/2]"),
        Document("b", "as the glossary says: a thing of the KIND called termbc in the test "
                 "dictionary. End.", "docs", "pydocs-rst:glossary.rst")])
    train, evaluation, record = build_instruction_set(params(resources), tokenizer, corpus)
    assert (len(train), len(evaluation)) == (30, 10)
    pairs = [*train.itertuples(), *evaluation.itertuples()]
    assert not {"man:tool3.1", "gcide:Termbc"} & {p.key for p in pairs}
    assert not any(corpus.contains(p.response) or corpus.drew(p.key) for p in pairs)
    assert record["sources"]["man"]["drawn_by_corpus"] == 1
    assert record["sources"]["dictionary"]["text_in_corpus"] == 1
    assert record["sources"]["dictionary"]["kept"] == record["sources"]["man"]["kept"] == 20
    assert set(train["id"]).isdisjoint(evaluation["id"])
    assert record["eval_ids"] == evaluation["id"].tolist()
    assert (train["id"] == [instruction_id(t) for t in train["instruction"]]).all()
    again = build_instruction_set(params(resources), tokenizer, corpus)
    assert again[1]["id"].tolist() == evaluation["id"].tolist()
    other = build_instruction_set(params(resources, seed=4), tokenizer, corpus)
    assert other[1]["id"].tolist() != evaluation["id"].tolist()


def test_a_source_that_runs_short_is_an_error(resources, tiny_tokenizer_dir):
    from selectlab.tokens import load_tokenizer

    tokenizer = load_tokenizer(tiny_tokenizer_dir)
    with pytest.raises(ValueError, match="'dictionary' gave 30 usable pairs, the mix asks for 40"):
        build_instruction_set(params(resources, train_pairs=70, eval_instructions=10),
                              tokenizer, CorpusText([]))
    # Every prompt is longer than 8 tokens: nothing fits, and the message says why.
    with pytest.raises(ValueError, match="'prompt_too_long': 30"):
        build_instruction_set(params(resources, max_prompt_tokens=8), tokenizer, CorpusText([]))


def test_sharegpt_keeps_first_turns_once(tmp_path, tiny_tokenizer_dir):
    from selectlab.tokens import load_tokenizer

    records = [{"id": f"r{i}", "conversations": [
        {"from": "human", "value": f" Question number {i}? "},
        {"from": "gpt", "value": f"Answer {i}."}, {"from": "human", "value": "more"}]}
        for i in range(8)]
    records += [
        {"id": "dup", "conversations": [{"from": "human", "value": "question NUMBER 1?"},
                                        {"from": "gpt", "value": "again"}]},
        {"id": "gpt-first", "conversations": [{"from": "gpt", "value": "hi"},
                                              {"from": "human", "value": "x"}]},
        {"id": "empty", "conversations": [{"from": "human", "value": "q"},
                                          {"from": "gpt", "value": "  "}]},
        {"id": "short", "conversations": [{"from": "human", "value": "q"}]}, "junk"]
    path = tmp_path / "sharegpt.json"
    path.write_text(json.dumps(records))
    pairs, dropped = sharegpt_pairs(path)
    assert [p.instruction for p in pairs[:2]] == ["Question number 0?", "Question number 1?"]
    assert dropped == {"duplicate_instruction": 1, "empty_turn": 1, "no_first_turn": 1,
                       "not_an_object": 1, "not_user_then_assistant": 1}
    tokenizer = load_tokenizer(tiny_tokenizer_dir)
    train, evaluation, record = build_instruction_set(
        {"kind": "sharegpt", "seed": 1, "path": str(path), "train_pairs": 5,
         "eval_instructions": 3, "chat_template": TEMPLATE, "max_prompt_tokens": 64},
        tokenizer, None)
    assert (len(train), len(evaluation)) == (5, 3)
    assert record["sources"]["sharegpt"]["kept"] == 8
    assert set(train["key"]) | set(evaluation["key"]) == {f"sharegpt:r{i}" for i in range(8)}
