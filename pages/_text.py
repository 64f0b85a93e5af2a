"""Data text (passages, queries, decoded outputs) shown through Streamlit's Markdown, escaped: a
passage's "*Unknown*", ":smile:", "[a](b)" or "__x__" is shown as written, not as italics, an
emoji, a link or bold."""
import re

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


def literal(text: object) -> str:
    """``text`` with every Markdown (and Streamlit directive) character backslash-escaped."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", str(text))
