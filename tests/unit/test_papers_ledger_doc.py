"""README.md's claims table is the ledger's: written from config/claims.yaml, row for row."""

from __future__ import annotations

from selectlab.papers import ledger_doc as D
from selectlab.papers.claims import parse_claim
from tests.conftest import REPO


def test_readme_claims_table_is_written_from_the_ledger():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    claims = D.ledger_claims(REPO)
    block = D.readme_block(readme)
    assert block == D.claims_table(claims), (
        "README.md's claims table differs from config/claims.yaml: run "
        "`python -m selectlab.papers.ledger_doc README.md`")
    rows = block.splitlines()[2:]
    assert [row.split(" | ")[0] for row in rows] == [f"| `{c.id}`" for c in claims]
    # README's top is untouched: the two set-up commands come first.
    assert readme.index("bash scripts/bootstrap.sh &&") < readme.index("## Claims")


def test_rows_say_what_is_compared_and_how_it_is_judged():
    each = parse_claim({"id": "x", "paper": "DataMan", "source": "DataMan Table 1", "claim": "",
                        "each": {"table": "dataman_table1", "column": "average", "op": "<",
                                 "variants": ["dsir_wikipedia", "dsir_book"],
                                 "than": {"variant": "uniform"}}})
    assert D.checks(each) == "dsir_wikipedia, dsir_book < uniform on average (dataman_table1)"
    assert D.verdict_rule(each) == "all 2 differences: 95% interval on the claimed side of 0"
    chain = parse_claim({"id": "y", "paper": "DataMan", "source": "", "claim": "",
                         "chain": {"table": "dataman_table1", "column": "average", "op": "<",
                                   "variants": ["overall_l1", "overall_l3", "overall_l5"]}})
    assert D.checks(chain) == "overall_l1 < overall_l3 < overall_l5 on average (dataman_table1)"
    assert D.verdict_rule(chain).startswith("every neighbouring pair the run has (up to 2)")
    match = parse_claim({"id": "z", "paper": "Meta-rater", "source": "", "claim": "",
                         "tolerance": 0.5, "holds": "any", "comparisons": [
                             {"left": {"table": "metarater_figure1", "block": "0.5",
                                       "variant": "metarater_all", "column": "average"},
                              "op": "~", "right": {"variant": "uniform", "block": "1.0"}}]})
    assert D.checks(match) == ("metarater_all[0.5].average ~ uniform[1.0].average "
                               "(metarater_figure1)")
    assert D.verdict_rule(match) == "the difference: 95% interval within ±0.5"


def test_rewrite_replaces_only_the_table(tmp_path):
    (tmp_path / "config" / "schema").mkdir(parents=True)
    for name in ("config/claims.yaml", "config/schema/claims.schema.yaml"):
        (tmp_path / name).write_text((REPO / name).read_text())
    readme = tmp_path / "README.md"
    readme.write_text(f"# top\n\n{D.BEGIN}\n| stale |\n{D.END}\n\n## after\n")
    D.rewrite(readme)
    text = readme.read_text()
    assert text.startswith(f"# top\n\n{D.BEGIN}\n| claim |") and text.endswith("## after\n")
    assert "| stale |" not in text
    assert D.readme_block(text) == D.claims_table(D.ledger_claims(tmp_path))


def test_demo_block_shows_a_runs_verdicts_with_its_time_scale_and_notes(tmp_path):
    import pandas as pd

    from selectlab.papers import demo_doc
    from selectlab.papers.claims import CLAIM_COLUMNS
    from selectlab.report.table_files import write_table

    tables = tmp_path / "claims_demo" / "tables"
    tables.mkdir(parents=True)
    rows = [["a", "QuRating", "T1", "x", "reproduced", "1 of 1 run", "u > v: 2.00 vs 1.00, "
             "diff +1.00 [+0.50, +1.50] -> reproduced", "replicates", "different scale"],
            ["b", "DataMan", "T1", "y", "not run", "0 of 2 run", "p | q: not run", "",
             "different scale"]]
    write_table(pd.DataFrame(rows, columns=CLAIM_COLUMNS), tables / "claims.csv",
                tables / "claims.md", ["SIMULATED judge: labels from the corpus's damage."])
    readme = tmp_path / "README.md"
    readme.write_text(f"# top\n{demo_doc.BEGIN}\nstale\n{demo_doc.END}\nafter\n")
    demo_doc.main([str(readme), str(tmp_path / "claims_demo"), "--minutes", "83.4",
                   "--commit", "abc1234"])
    block = D.readme_block(readme.read_text(), demo_doc.BEGIN, demo_doc.END)
    assert block.splitlines()[0] == ("`claims_demo` at commit abc1234, 83 minutes on 2 cores "
                                     "(different scale): reproduced 1, not run 1.")
    assert demo_doc.block_claims(block) == ["a", "b"]
    assert "| `b` | not run | 0 of 2 run | p \\| q: not run |" in block  # pipes escaped
    assert "- SIMULATED judge: labels from the corpus's damage." in block
    assert readme.read_text().endswith(f"{demo_doc.END}\nafter\n") and "stale" not in block


def test_readme_demo_block_shows_only_claims_the_ledger_has_labelled_with_its_judge():
    from selectlab.papers import demo_doc

    block = D.readme_block((REPO / "README.md").read_text(encoding="utf-8"), demo_doc.BEGIN,
                           demo_doc.END)
    ledger = [c.id for c in D.ledger_claims(REPO)]
    assert demo_doc.block_claims(block) == ledger, (
        "README.md's claims demo block names claims the ledger no longer has, or misses some: "
        "rerun the demo and `python -m selectlab.papers.demo_doc`")
    assert "(different scale)" in block.splitlines()[0] and "SIMULATED judge" in block
