"""The shared figure style: stage names in words and the print-size check every saved figure passes."""

from __future__ import annotations

import pytest

from biastransfer.report import style


@pytest.mark.parametrize(
    ("stage", "n_seeds", "words"),
    [
        ("pretrained", None, "pretrained"),
        ("ft-synthetic_target", 3, "finetuned on synthetic_target (mean of 3 seeds)"),
        ("ft-coco", 1, "finetuned on coco (1 seed)"),
        ("ft-coco", None, "finetuned on coco"),
        ("ft-coco-seed2", None, "finetuned on coco, seed 2"),
        ("scratch-coco-seed0", None, "trained from scratch on coco, seed 0"),
        ("scratch-coco", 1, "trained from scratch on coco (1 seed)"),
    ],
)
def test_stage_words(stage, n_seeds, words):
    assert style.stage_words(stage, n_seeds) == words


def test_a_bad_stage_name_is_refused():
    with pytest.raises(ValueError, match="'ft-coco-seedx'"):
        style.stage_words("ft-coco-seedx")


def test_print_size_check_finds_small_fonts_and_wide_figures(tmp_path):
    with style.paper_style():
        fig, ax = style.paper_figure("single", 2.0)
        ax.set_title("fine")
        ax.set_xlabel("x")
    assert style.print_size_problems(fig) == []
    assert style.smallest_font(fig) >= style.MIN_FONT_PT
    ax.text(0.5, 0.5, "tiny", fontsize=6)
    assert any("'tiny' prints at 6.0 pt" in p for p in style.print_size_problems(fig))
    with pytest.raises(ValueError, match="not fit for print"):
        style.save_figure(fig, tmp_path / "f")
    assert not list(tmp_path.iterdir())  # nothing half-written
    with style.paper_style():
        wide, ax = style.paper_figure("double", 2.0)
        ax.text(1.5, 0.5, "a label far outside the axes, making the saved figure wider", transform=ax.transAxes)
    problems = style.print_size_problems(wide)
    assert problems and "more than a page's 7.0 in" in problems[0]
    assert any("prints at 6." in p for p in problems)  # its 7 pt ticks shrink with it
    with style.paper_style():
        ok, ax = style.paper_figure("double", 2.0)
        ax.plot([0, 1])
    png, pdf = style.save_figure(ok, tmp_path / "ok")
    assert png.stat().st_size > 0 and pdf.read_bytes().startswith(b"%PDF")


def test_save_figure_writes_an_svg_on_request_the_same_bytes_each_time(tmp_path):
    def draw():
        with style.paper_style():
            fig, ax = style.paper_figure("single", 2.0)
            ax.plot([0, 1], label="a line")
            ax.legend()
        return fig

    written = style.save_figure(draw(), tmp_path / "a" / "f", formats=("png", "pdf", "svg"))
    assert [p.name for p in written] == ["f.png", "f.pdf", "f.svg"]
    svg = written[2].read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg and "<dc:date>" not in svg
    again = style.save_figure(draw(), tmp_path / "b" / "f", formats=("svg",))
    assert again[0].read_bytes() == written[2].read_bytes()  # no timestamp, fixed ids
    with pytest.raises(ValueError, match=r"unknown format\(s\) \['gif'\]"):
        style.save_figure(draw(), tmp_path / "c" / "f", formats=("png", "gif"))
    assert not (tmp_path / "c").exists()  # nothing written
