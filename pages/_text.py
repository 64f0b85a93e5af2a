"""Data text (passages, queries, decoded outputs) shown through Streamlit's Markdown, escaped: a
passage's "*Unknown*", ":smile:", "[a](b)" or "__x__" is shown as written, not as italics, an
emoji, a link or bold."""
import re

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


def literal(text: object) -> str:
    """``text`` with every Markdown (and Streamlit directive) character backslash-escaped."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", str(text))


def code(text: object) -> str:
    """``text`` as a Markdown code span that shows it whole: fenced by one backtick more than its longest
    run of backticks, padded when it starts or ends with one (CommonMark), so an id or path with a
    backtick does not end the span early."""
    text = str(text).replace("\n", " ")
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def marked(text: object, spans: list[tuple[int, int]]) -> str:
    """``text`` escaped as ``literal`` does, with each ``(start, end)`` span on an orange background
    (Streamlit's Markdown directive): the query's words in a passage."""
    text, out, at = str(text), [], 0
    for start, end in spans:
        out += [literal(text[at:start]), f":orange-background[{literal(text[start:end])}]"]
        at = end
    return "".join(out) + literal(text[at:])


def matched_words_line(query: str, words: list[str], where: str) -> str:
    """One Markdown line: the words of ``query`` that ``where`` holds, as BM25 matches them."""
    if not words:
        return f"“{literal(query)}” shares no word with {where} (as BM25 matches words: stems, stop words left out)."
    listed = ", ".join(f":orange-background[{literal(w)}]" for w in words)
    return f"Words of “{literal(query)}” in {where} (as BM25 matches them: stems, stop words left out): {listed}"


def result_columns() -> dict:
    """Column settings for a top-k table (rank, doc_id, score, passage, grade, target): the numbers
    narrow, so the passage text gets the table's width instead of falling past its edge."""
    import streamlit as st

    return {"rank": st.column_config.NumberColumn(width=50), "doc_id": st.column_config.TextColumn(width=110),
            "score": st.column_config.NumberColumn(format="%.3f", width=65),
            "passage": st.column_config.TextColumn(width=565),
            "grade": st.column_config.NumberColumn(width=75, help="judged grade; unjudged where the judgments do not name it"),
            "target": st.column_config.TextColumn(width=70)}


def change_delta(value: float, before: float) -> dict:
    """``st.metric`` arguments for a change of a score shown to three decimals: "+0.064" with an arrow,
    or "±0.000" without arrow or colour when it rounds to no change (Streamlit draws a green up arrow
    for "+0.000")."""
    shown = f"{value - before:+.3f}"
    if shown in ("+0.000", "-0.000"):
        return {"delta": "±0.000", "delta_color": "off", "delta_arrow": "off"}
    return {"delta": shown}
