"""Exports of a comparison: the LaTeX table (figures: ``eqi_core.figure_export``)."""
from __future__ import annotations

import pandas as pd

# LaTeX's special characters as text mode writes them (as pandas' ``to_latex(escape=True)`` does)
_LATEX_SPECIALS = str.maketrans({"\\": r"\textbackslash ", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                                 "{": r"\{", "}": r"\}", "~": r"\textasciitilde ", "^": r"\textasciicircum "})


def latex_text(text: str) -> str:
    """``text`` as LaTeX prints it literally: a run file named ``bm25&rm3_100%.trec`` or a measure
    such as ``nDCG(judged_only=True)@10`` would otherwise stop the compile."""
    return str(text).translate(_LATEX_SPECIALS)


def tasc_latex(table: pd.DataFrame, measure: str, caption: str | None = None) -> str:
    """A booktabs table: ranker, release, mean metric, TaSC max and mean with 95% CIs; every cell,
    header and the caption escaped (ranker names come from users' file names)."""
    def cell(row, agg):
        v = row[f"tasc_{agg}"]
        return "--" if pd.isna(v) else f"{v:.4f} [{row[f'tasc_{agg}_lo']:.3f}, {row[f'tasc_{agg}_hi']:.3f}]"

    out = pd.DataFrame({
        "Ranker": table["ranker"],
        "Released": table["release"],
        measure: table["mean_metric"].map("{:.4f}".format),
        "TaSC max [95% CI]": [cell(r, "max") for _, r in table.iterrows()],
        "TaSC mean [95% CI]": [cell(r, "mean") for _, r in table.iterrows()],
    })
    body = out.to_latex(index=False, escape=True, column_format="llrrr")
    caption = latex_text(caption or f"Mean {measure} and TaSC (max, mean) per ranker.")
    return "\\begin{table}\n\\centering\n" + body + f"\\caption{{{caption}}}\n\\end{{table}}\n"
