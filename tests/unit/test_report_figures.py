"""Figures (deterministic PNGs, correlations) and the self-contained HTML report."""

from __future__ import annotations

import base64

import numpy as np
import pandas as pd
import pytest

from selectlab.report.figures import pearson, plot_loss_curves, plot_ppl_vs_icl, spearman
from selectlab.report.html import ReportSection, render_html_report, rst_to_html, table_section
from selectlab.report.table_files import write_table

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def main_frame() -> pd.DataFrame:
    frame = pd.DataFrame(
        {
            "family": ["uniform", "DSIR", "DSIR", "QuRating", "Meta-rater proxy"],
            "variant": ["Uniform", "DSIR Wiki", "DSIR Book", "Edu t=2", "Proxy 1"],
            "val ppl": [30.0, 28.5, 31.0, 27.0, 60.0],
            "test ppl": [31.0, 29.0, 32.0, 27.5, 61.0],
            "mean of groups": [40.0, 43.5, 39.0, 46.0, np.nan],
        },
        index=pd.Index(["uniform", "dsir_wiki", "dsir_book", "edu_t2", "proxy"], name="name"),
    )
    frame.attrs["decimals"] = {"val ppl": 2, "test ppl": 2, "mean of groups": 1}
    return frame


def train_log(seed: int, steps: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    step = np.arange(1, steps + 1)
    loss = 9.0 * np.exp(-step / 15.0) + 3.0 + rng.normal(0.0, 0.05, steps)
    return pd.DataFrame(
        {"step": step, "tokens": step * 4096, "loss": loss, "lr": 5e-4}
    )


def test_correlations_match_hand_values():
    assert pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert pearson([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    # Monotone but not linear: Spearman is exactly 1, Pearson is below 1.
    x, y = [1, 2, 3, 4], [1, 2, 3, 100]
    assert spearman(x, y) == pytest.approx(1.0)
    assert pearson(x, y) < 0.9
    assert pearson([1, 2], [3, 4]) is None  # too few points to mean anything
    assert pearson([1, 1, 1], [1, 2, 3]) is None
    # Ties share their average rank: ranks (1.5, 1.5, 3) vs (1, 2, 3).
    assert spearman([5, 5, 7], [1, 2, 3]) == pytest.approx(
        np.corrcoef([1.5, 1.5, 3], [1, 2, 3])[0, 1]
    )


def test_ppl_vs_icl_png_is_byte_identical_across_runs(tmp_path):
    first = plot_ppl_vs_icl(main_frame(), tmp_path / "a" / "ppl_vs_icl.png")
    second = plot_ppl_vs_icl(main_frame(), tmp_path / "b" / "ppl_vs_icl.png")
    data = first.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    assert data == second.read_bytes()
    assert b"Software" not in data and b"matplotlib" not in data.lower()


def test_ppl_vs_icl_survives_no_plottable_points(tmp_path):
    frame = main_frame()
    frame["mean of groups"] = np.nan
    out = plot_ppl_vs_icl(frame, tmp_path / "empty.png")
    assert out.read_bytes().startswith(PNG_SIGNATURE)


def test_loss_curves_png_is_byte_identical_and_reads_csv(tmp_path):
    csv_path = tmp_path / "uniform_train_log.csv"
    train_log(1).to_csv(csv_path, index=False)
    logs = {"uniform": csv_path, "dsir_wiki": train_log(2), "dsir_book": train_log(3)}
    families = {"uniform": "uniform", "dsir_wiki": "DSIR", "dsir_book": "DSIR"}
    labels = {"uniform": "Uniform", "dsir_wiki": "DSIR Wiki", "dsir_book": "DSIR Book"}
    outputs = [
        plot_loss_curves(logs, tmp_path / f"loss_{i}.png", labels=labels, families=families)
        for i in range(2)
    ]
    assert outputs[0].read_bytes() == outputs[1].read_bytes()
    assert outputs[0].read_bytes().startswith(PNG_SIGNATURE)
    empty = pd.DataFrame(columns=["step", "tokens", "loss", "lr", "seconds"])
    lonely = plot_loss_curves({"x": empty}, tmp_path / "no_log.png")
    assert lonely.read_bytes().startswith(PNG_SIGNATURE)


def test_rst_caption_subset():
    rendered = rst_to_html("Shows ``val ppl`` and *average*.\n\n- one\n  continued\n- two <b>\n")
    assert "<p>Shows <code>val ppl</code> and <em>average</em>.</p>" in rendered
    assert "<li>one continued</li>" in rendered
    assert "&lt;b&gt;" in rendered


def test_html_report_is_self_contained_and_deterministic(tmp_path):
    caption = tmp_path / "main_table.rst"
    caption.write_text("Main results per variant; ``average`` is the mean over groups.\n")
    figure_caption = tmp_path / "ppl_vs_icl.rst"
    figure_caption.write_text("Perplexity against ICL average.\n")
    figure = plot_ppl_vs_icl(main_frame(), tmp_path / "ppl_vs_icl.png")
    note = "Ratings come from the SIMULATED judge (offline default), not an LLM"
    write_table(main_frame(), tmp_path / "main.csv", tmp_path / "main.md", [note])

    sections = [
        table_section("Main table", tmp_path / "main.csv", tmp_path / "main.md", caption),
        ReportSection("Perplexity vs ICL", figure_caption, figure_png=figure),
    ]
    first = render_html_report("selectlab <test>", sections, tmp_path / "one" / "report.html")
    second = render_html_report("selectlab <test>", sections, tmp_path / "two" / "report.html")
    page = first.read_text()
    assert first.read_bytes() == second.read_bytes()
    assert "<title>selectlab &lt;test&gt;</title>" in page
    assert base64.b64encode(figure.read_bytes()).decode() in page
    assert "<code>average</code> is the mean over groups" in page
    assert '<td class="num">30.00</td>' in page and "<td>DSIR Wiki</td>" in page
    assert f"<li>{note}</li>" in page
    # Self-contained: nothing fetched from elsewhere.
    assert "http://" not in page and "https://" not in page and "<script" not in page
