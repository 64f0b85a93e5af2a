"""Data text shown through Streamlit's Markdown is escaped (pages/_text.py)."""
import html
import re

import pytest

from pages._text import literal

WRITTEN = "*Unknown* :smile: $6-$12 [a](b) :red[x] 1. item # not a title __x__ <b>b</b> ~~s~~ C:\\temp"


def test_markdown_characters_are_escaped_by_hand():
    assert literal("*a* :b: [c](d)") == r"\*a\* \:b\: \[c\]\(d\)"
    assert literal("plain words 42") == "plain words 42"


def test_escaped_text_renders_as_written_in_commonmark():
    markdown_it = pytest.importorskip("markdown_it", reason="markdown-it-py (installed with typer's rich) renders CommonMark")
    rendered = markdown_it.MarkdownIt("commonmark").enable("strikethrough").render(literal(WRITTEN)).strip()
    assert re.fullmatch(r"<p>.*</p>", rendered) and "<em>" not in rendered and "<a " not in rendered
    assert html.unescape(rendered[3:-4]) == WRITTEN


def test_marked_spans_by_hand():
    from pages._text import marked

    assert marked("a bank_loan (bank)", [(2, 11), (13, 17)]) == r"a :orange-background[bank\_loan] \(:orange-background[bank]\)"
    assert marked("*x*", []) == r"\*x\*"


def test_matched_words_line():
    from pages._text import matched_words_line

    assert matched_words_line("river bank", ["bank", "banks"], "it") == (
        "Words of “river bank” in it (as BM25 matches them: stems, stop words left out): "
        ":orange-background[bank], :orange-background[banks]")
    assert matched_words_line("*piano*", [], "this passage").startswith(r"“\*piano\*” shares no word with this passage")


def test_a_change_that_rounds_to_nothing_has_no_arrow():
    """A suggester whose best equals the query's nDCG@10 showed a green "↑ +0.000"."""
    from pages._text import change_delta

    assert change_delta(0.5, 0.5) == change_delta(0.5001, 0.5) == change_delta(0.4999, 0.5) == {
        "delta": "±0.000", "delta_color": "off", "delta_arrow": "off"}
    assert change_delta(0.564, 0.5) == {"delta": "+0.064"} and change_delta(0.301, 0.5) == {"delta": "-0.199"}


@pytest.mark.parametrize("text", ["q1", "a`b", "`x", "y``", "``", "C:\\temp *x*"])
def test_a_code_span_shows_an_id_with_backticks_whole(text):
    from pages._text import code

    assert code("a`b") == "``a`b``" and code("`x") == "`` `x ``"  # by hand: a longer fence, padded at a backtick
    markdown_it = pytest.importorskip("markdown_it", reason="markdown-it-py (installed with typer's rich) renders CommonMark")
    rendered = markdown_it.MarkdownIt("commonmark").render(f"id {code(text)} here").strip()
    assert rendered.count("<code>") == 1 and html.unescape(rendered.split("<code>")[1].split("</code>")[0]) == text
