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
