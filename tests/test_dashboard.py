"""The class dashboard's verdicts, summary and page, on made-up check cells (tests/test_class.py
runs it on a real class)."""

from __future__ import annotations

from collections import Counter

import nbformat

from minilucid_course import dashboard, slides


def _check_cell(*outputs):
    cell = nbformat.v4.new_code_cell("check_something(answer)")
    cell.outputs = [nbformat.v4.new_output(**o) for o in outputs]
    return cell


def _error(ename: str, evalue: str) -> dict:
    return {"output_type": "error", "ename": ename, "evalue": evalue, "traceback": []}


def test_a_verdict_per_check_cell():
    passed = _check_cell({"output_type": "stream", "name": "stdout", "text": "✓ done\n"})
    assert dashboard.verdict(passed, 2.0, 2.0) == (dashboard.PASS, None)
    wrong = _check_cell(_error("CheckFailed", "forgot to add up gradients\nsecond line"))
    assert dashboard.verdict(wrong, 0.0, 2.0) == (dashboard.FAIL, "forgot to add up gradients")
    stub = _check_cell(_error("NotDone", "not done yet: your sort still raises"))
    assert dashboard.verdict(stub, 0.0, 2.0) == (dashboard.NOT_ANSWERED, None)
    crash = _check_cell(_error("NameError", "name 'sort' is not defined"))
    assert dashboard.verdict(crash, 0.0, 2.0) == (
        dashboard.FAIL,
        "NameError: name 'sort' is not defined",
    )
    # no error shown, but the gradebook refused the points: a fail, not a pass
    state, mistake = dashboard.verdict(passed, 0.0, 2.0)
    assert state == dashboard.FAIL and "gradebook" in mistake


def test_the_summary_and_the_page_count_students_per_mistake():
    check = dashboard.CheckSummary(
        "ex03_2_backward_sweep_check",
        counts=Counter({dashboard.PASS: 3, dashboard.FAIL: 7, dashboard.NOT_ANSWERED: 2}),
        mistakes=Counter({"forgot to add up gradients": 5, "wrong order": 2}),
    )
    chapter = dashboard.ChapterSummary("ch03", students=12, handed_in=11, checks=[check])
    text = dashboard.report([chapter])
    assert "ch03: 11 of 12 students handed in" in text
    assert "ex03_2_backward_sweep_check: pass 3, fail 7, not answered 2" in text
    assert text.index("forgot to add up gradients: 5") < text.index("wrong order: 2")
    page = dashboard.page([chapter])
    assert page.count("<svg") == 1 and page.count("<rect") == 3 + 3  # three bars, a legend
    assert "<b>5</b> forgot to add up gradients" in page
    assert "<script" not in page and "src=" not in page  # self-contained


def test_slides_start_at_each_section():
    kinds = [
        slides.slide_type(nbformat.v4.new_markdown_cell(text))
        for text in ("# 03 · Title", "## 1. A section", "### A subsection", "Plain prose")
    ]
    assert kinds == ["slide", "slide", "subslide", "-"]
    assert slides.slide_type(nbformat.v4.new_code_cell("## not a heading")) == "-"
