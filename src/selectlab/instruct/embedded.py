"""Offline instruction-response pairs from reference text that ships with Debian and Python.

Three kinds of pair, each a short question with one checkable answer, so that a small model
has a learnable task and every instruction has a reference answer:

  dictionary  GCIDE headword -> its first definition     "What does the word "tardy" mean?"
  python      documented stdlib function -> the first    "What does the Python function
              paragraph of its docstring                  `textwrap.dedent(text)` do?"
  man         man page name -> the one-line summary of   "What does the command `ls` do?"
              its NAME section

Each reader yields `Pair`s in a seeded random order and stops when the caller stops asking, so
a small set never pays for reading a whole resource. `Pair.key` names the text a pair was built
from in the corpus builder's own `source_detail` spelling ("gcide:<headword>",
"stdlib:<path>#<top-level def or class>", "man:<file>"), which is how `heldout.py` keeps every
pair off text the embedded corpus trains on. The resources are read from the same default
locations as the corpus readers (`selectlab.corpus.web_sources`, `selectlab.corpus.sources`).
"""

from __future__ import annotations

import ast
import gzip
import inspect
import random
import re
import sysconfig
import tokenize
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from selectlab.corpus.passages import MissingResourceError
from selectlab.corpus.sources import list_stdlib_modules
from selectlab.corpus.web_sources import (
    DEFAULT_GCIDE,
    DEFAULT_MAN_ROOT,
    gcide_bytes,
    load_gcide_index,
)


@dataclass(frozen=True)
class Pair:
    source: str  # dictionary | python | man
    key: str  # the corpus builder's source_detail of the text the pair comes from
    instruction: str
    response: str


def one_line(text: str) -> str:
    return " ".join(text.split())


def as_sentence(text: str) -> str:
    """First letter up, a full stop at the end unless the text already ends a sentence."""
    text = one_line(text)
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


def fits(text: str, params: Mapping) -> bool:
    words = len(text.split())
    return (words >= int(params.get("min_words", 3))
            and len(text) <= int(params.get("max_response_chars", 300)))


# -- dictionary: GCIDE -------------------------------------------------------------------------
_GCIDE_HEAD = re.compile(r"^(?P<word>[^\\\n]+?)\s*\\")
_HEADWORD = re.compile(r"^[A-Za-z][a-z'-]+$")  # one plain lowercase word (no names, no accents)
_SENSE_START = re.compile(r"^\s*(?:\d+\.|\([a-z]\))\s+")
_LABEL = re.compile(r"^\([^()]{1,25}\)\s*")  # a domain label such as "(Bot.)" or "(Law)"
_CITATION = re.compile(r"\s--(?=\S)")  # "--Goldsmith." (a dash pair with spaces is prose)
# Definitions that only point at another entry teach nothing checkable.
_REFERENTIAL = re.compile(r"^(?:see|same as|alt\.|imp\.|p\. ?p\.|pl\.|obs\.|of |a variant|"
                          r"variant of|plural of|\w+ of \w+\.$)", re.IGNORECASE)
DICTIONARY_QUESTIONS = ('What does the word "{word}" mean?', 'Define the word "{word}".',
                        'Give the meaning of "{word}".')


def gcide_definition(entry: str) -> tuple[str, str] | None:
    """(headword, first definition) of one GCIDE entry, or None when there is no clean one.

    The header (headword, pronunciation, part of speech, a bracketed etymology that may run
    over several lines) ends where the bracket depth returns to zero; the first indented line
    after it starts the first sense, which runs to a blank line, a source tag ("[1913
    Webster]"), a citation ("--Author") or the next numbered sense.
    """
    lines = entry.splitlines()
    head = _GCIDE_HEAD.match(lines[0]) if lines else None
    if head is None:
        return None
    depth, start = 0, None
    for index, line in enumerate(lines):
        if index > 0 and depth == 0 and line.startswith("   ") and line.strip():
            start = index
            break
        depth = max(0, depth + line.count("[") - line.count("]"))
    if start is None:
        return None
    sense: list[str] = []
    for line in lines[start:]:
        stripped = line.strip()
        if (not stripped or stripped.startswith(("[", "--", "Note:", "Syn.")) or
                (sense and _SENSE_START.match(line))):
            break
        sense.append(stripped)
    text = _SENSE_START.sub("", one_line(" ".join(sense)))
    text = _CITATION.split(_LABEL.sub("", text))[0]
    text = re.sub(r"\{([^{}]*)\}", r"\1", text).strip()
    if not text or re.search(r"[\[\]{}\\\"]", text) or _REFERENTIAL.match(text):
        return None
    return head.group("word").strip(), as_sentence(text)


def dictionary_pairs(params: Mapping, rng: random.Random) -> Iterator[Pair]:
    """GCIDE headwords (one plain word, the entry's own headword) -> their first definition."""
    base = str(params.get("gcide_path", DEFAULT_GCIDE))
    index = load_gcide_index(base + ".index")
    order = list(range(len(index)))
    rng.shuffle(order)
    data = gcide_bytes(base + ".dict.dz")
    for i in order:
        headword, offset, length = index[i]
        if not _HEADWORD.match(headword):
            continue
        parsed = gcide_definition(data[offset:offset + length].decode("utf-8", "replace"))
        # An index line can point at another word's entry ("Clicking" -> "Click").
        if parsed is None or parsed[0].lower() != headword.lower() or not fits(parsed[1], params):
            continue
        question = DICTIONARY_QUESTIONS[rng.randrange(len(DICTIONARY_QUESTIONS))]
        yield Pair("dictionary", f"gcide:{headword}", question.format(word=headword.lower()),
                   parsed[1])


# -- python: documented standard-library functions ---------------------------------------------
MAX_SIGNATURE_CHARS = 60
_FIRST_SENTENCE = re.compile(r"(?<=[a-z)]\.)\s+(?=[A-Z])")


def module_name(rel: Path) -> str:
    parts = list(rel.with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def docstring_summary(node: ast.AST) -> str | None:
    """The docstring's first paragraph on one line; None without a usable one."""
    doc = ast.get_docstring(node)
    if not doc:
        return None
    first = one_line(inspect.cleandoc(doc).split("\n\n")[0])
    # Signature lines ("f(a, b) -> c"), lead-ins to a list or code, and doctest text are not
    # answers to "what does it do".
    if (not first or first.endswith(":") or ">>>" in first or "::" in first or " - " in first
            or re.match(r"^[\w.]+\(", first)):
        return None
    return as_sentence(_FIRST_SENTENCE.split(first, 1)[0])


def signature(node: ast.FunctionDef, method: bool) -> str:
    args = node.args
    if method and args.args and args.args[0].arg in ("self", "cls"):
        args = ast.arguments(posonlyargs=args.posonlyargs, args=args.args[1:],
                             vararg=args.vararg, kwonlyargs=args.kwonlyargs,
                             kw_defaults=args.kw_defaults, kwarg=args.kwarg,
                             defaults=args.defaults[-len(args.args[1:]):] if args.args[1:]
                             else [])
    text = ast.unparse(args)
    return f"({text})" if len(text) <= MAX_SIGNATURE_CHARS else "(...)"


def _public_functions(tree: ast.Module) -> Iterator[tuple[str, str, ast.FunctionDef]]:
    """(top-level def or class, qualified name, def) of public functions and methods."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            yield node.name, node.name, node
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and not item.name.startswith("_"):
                    yield node.name, f"{node.name}.{item.name}", item


def python_pairs(params: Mapping, rng: random.Random) -> Iterator[Pair]:
    """At most `functions_per_module` (3) documented functions per stdlib module."""
    root = Path(params.get("stdlib_dir") or sysconfig.get_paths()["stdlib"])
    modules = list(list_stdlib_modules(root))
    rng.shuffle(modules)
    cap = int(params.get("functions_per_module", 3))
    for rel in modules:
        try:
            with tokenize.open(root / rel) as handle:
                tree = ast.parse(handle.read())
        except (SyntaxError, UnicodeDecodeError, ValueError, OSError):
            continue
        found = []
        for top, qualified, node in _public_functions(tree):
            summary = docstring_summary(node)
            if summary and fits(summary, params):
                found.append((top, qualified, node, summary))
        rng.shuffle(found)
        module = module_name(rel)
        for top, qualified, node, summary in found[:cap]:
            method = "." in qualified
            call = f"{qualified}{signature(node, method)}"
            question = (f"What does the method `{call}` of Python's `{module}` module do?"
                        if method else f"What does the Python function `{module}.{call}` do?")
            yield Pair("python", f"stdlib:{rel.as_posix()}#{top}", question, summary)


# -- man: the NAME line of manual pages --------------------------------------------------------
MAN_QUESTIONS = {
    "1": "What does the command `{name}` do?",
    "2": "What does the system call `{name}` do?",
    "3": "What does the library function `{name}` do?",
    "4": "What is the device file `{name}` for?",
    "5": "What is the file format `{name}` for?",
    "6": "What is the game `{name}`?",
    "7": "What does the manual page `{name}` describe?",
    "8": "What does the administration command `{name}` do?",
    "9": "What does the kernel routine `{name}` do?",
}
_ROFF_ESCAPES = [(re.compile(r"\\f(?:\[[^\]]*\]|\(..|.)"), ""), (re.compile(r"\\&"), ""),
                 (re.compile(r"\\[ ~0|^]"), " "), (re.compile(r"\\\(aq"), "'"),
                 (re.compile(r"\\\((?:lq|rq|dq)"), '"'), (re.compile(r"\\\((?:em|en)"), "-"),
                 (re.compile(r"\\-"), "-"), (re.compile(r"\\e"), "\\\\")]
_SECTION_HEADING = re.compile(r"^\.S[HhSs]\b")
_NAME_HEADING = re.compile(r'^\.S[Hh]\s+"?NAME"?\s*$', re.IGNORECASE)


def roff_text(line: str) -> str:
    """A roff input line as plain text: macro names dropped, escapes resolved."""
    if line.startswith((".", "'")):
        parts = line.split(None, 1)
        line = parts[1] if len(parts) > 1 and not line.startswith(('.\\"', "'\\\"")) else ""
        line = line.replace('"', "")
    for pattern, replacement in _ROFF_ESCAPES:
        line = pattern.sub(replacement, line)
    return line


def man_summary(source: str) -> str | None:
    """The one-line description of a man page's NAME section (man or mdoc macros)."""
    lines = source.splitlines()
    start = next((i for i, line in enumerate(lines) if _NAME_HEADING.match(line)), None)
    if start is None:
        return None
    body = []
    for line in lines[start + 1:]:
        if _SECTION_HEADING.match(line):
            break
        if line.startswith(".Nd "):  # mdoc: the description has its own macro
            return as_sentence(roff_text(line)) if "\\" not in roff_text(line) else None
        body.append(roff_text(line))
    text = one_line(" ".join(body))
    if " - " not in text:
        return None
    summary = text.split(" - ", 1)[1].strip()
    return as_sentence(summary) if summary and "\\" not in summary else None


def _read_page(path: Path) -> str:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as handle:
        return handle.read(20000)  # NAME comes first; no need for the whole page


def families_in_turn(pages: list[Path], rng: random.Random) -> Iterator[Path]:
    """Pages in random order, families (the name up to its first "_" or ".") taking turns.

    One family can dwarf the rest (16k `gcloud_*` pages where the Google Cloud CLI is
    installed); turns keep the questions varied, as the corpus's man page reader does.
    """
    families: dict[str, list[Path]] = {}
    for page in pages:
        families.setdefault(re.split(r"[_.]", page.name)[0], []).append(page)
    groups = [families[name] for name in sorted(families)]
    for group in groups:
        rng.shuffle(group)
    rng.shuffle(groups)
    for turn in range(max((len(group) for group in groups), default=0)):
        yield from (group[turn] for group in groups if turn < len(group))


def man_pairs(params: Mapping, rng: random.Random) -> Iterator[Pair]:
    """English man pages of sections 1-9 (no symlinks) -> their NAME line's description."""
    root = Path(params.get("man_root", DEFAULT_MAN_ROOT))
    pages = sorted(p for section in sorted(root.glob("man[1-9]")) for p in section.iterdir()
                   if p.is_file() and not p.is_symlink())
    if not pages:
        raise MissingResourceError(f"no man pages under {root}: apt-get install man-db manpages")
    for path in families_in_turn(pages, rng):
        file_name = path.name.removesuffix(".gz")
        name, _, section = file_name.rpartition(".")
        question = MAN_QUESTIONS.get(section[:1])
        if not name or question is None:
            continue
        summary = man_summary(_read_page(path))
        if summary and fits(summary, params):
            yield Pair("man", f"man:{file_name}", question.format(name=name), summary)


PAIR_SOURCES: dict[str, Callable[[Mapping, random.Random], Iterator[Pair]]] = {
    "dictionary": dictionary_pairs,
    "python": python_pairs,
    "man": man_pairs,
}
