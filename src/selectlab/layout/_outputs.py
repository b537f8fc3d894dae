"""Paths of cost plans, tables, figures, the report, provenance, logs, and the few paths
outside a run directory."""

from __future__ import annotations

import os

from selectlab.layout._paths import CAPTIONS, ENV, EXT, NAME, RESULTS, _under, path


# ---- cost: the estimate before running (the measured tables are `table`s) -----------------
@path
def cost_plan(root: str, name: str = NAME, ext: str = EXT) -> str:
    return _under(root, "cost", f"plan_{name}.{ext}")


# ---- tables, figures, report, provenance, archive --------------------------------------------
@path
def table(root: str, name: str = NAME, ext: str = EXT) -> str:
    return _under(root, "tables", f"{name}.{ext}")


@path
def paper_cells(root: str) -> str:
    """Every cell of the papers' own tables over replicates (what the comparison with the
    published numbers and the claims read)."""
    return table(root, "paper_cells", "csv")


@path
def figure(root: str, name: str = NAME) -> str:
    return _under(root, "figures", f"{name}.png")


@path
def html_report(root: str) -> str:
    return _under(root, "report", "report.html")


@path
def environment(root: str, env: str = ENV) -> str:
    return _under(root, "provenance", f"environment-{env}.txt")


@path
def provenance(root: str) -> str:
    return _under(root, "provenance", "provenance.json")


@path
def archive(root: str) -> str:
    return _under(root, "archive", f"selectlab-{os.path.basename(root.rstrip('/'))}.tar.gz")


# ---- logs ------------------------------------------------------------------------------------
@path
def log(root: str, rule: str = "{rule}") -> str:
    """The log of a rule that has one job."""
    return _under(root, "logs", f"{rule}.log")


@path
def job_log(root: str, rule: str = "{rule}", job: str = "{job}") -> str:
    """The log of one job of a rule, named by its wildcards (e.g. "{family}/{shard}")."""
    return _under(root, "logs", rule, f"{job}.log")


@path
def benchmark(root: str, rule: str = "{rule}", job: str = "{job}") -> str:
    """Snakemake's runtime and memory record of a heavy job, beside its log."""
    return _under(root, "logs", rule, f"{job}.benchmark.tsv")


# ---- outside a run directory -----------------------------------------------------------------
def caption(stem: str = "{stem}") -> str:
    """A report caption in the repository (report/{stem}.rst)."""
    return f"{CAPTIONS}/{stem}.rst"


def container_build_log(env: str = ENV) -> str:
    """Container builds serve every run, so their logs sit beside the run directories."""
    return f"{RESULTS}/containers/build_{env}.log"
