"""Exports of a comparison: the LaTeX table (figures: ``eqi_core.figure_export``)."""
from __future__ import annotations

import pandas as pd


def tasc_latex(table: pd.DataFrame, measure: str, caption: str | None = None) -> str:
    """A booktabs table: ranker, release, mean metric, TaSC max and mean with 95% CIs."""
    def cell(row, agg):
        v = row[f"tasc_{agg}"]
        return "--" if pd.isna(v) else f"{v:.4f} [{row[f'tasc_{agg}_lo']:.3f}, {row[f'tasc_{agg}_hi']:.3f}]"

    out = pd.DataFrame({
        "Ranker": table["ranker"].str.replace("_", r"\_", regex=False),
        "Released": table["release"],
        measure: table["mean_metric"].map("{:.4f}".format),
        "TaSC max [95\\% CI]": [cell(r, "max") for _, r in table.iterrows()],
        "TaSC mean [95\\% CI]": [cell(r, "mean") for _, r in table.iterrows()],
    })
    body = out.to_latex(index=False, escape=False, column_format="llrrr")
    caption = caption or f"Mean {measure} and TaSC (max, mean) per ranker."
    return "\\begin{table}\n\\centering\n" + body + f"\\caption{{{caption}}}\n\\end{{table}}\n"
