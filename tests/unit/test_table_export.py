"""CSV for spreadsheets: formula-like text marked, numbers untouched, and our CSVs read back as logs."""
import pandas as pd

from eqi_core.loaders.query_log import read_query_log
from eqi_core.table_export import csv_bytes, spreadsheet_safe, unmark

# real StackExchange queries of the shared logs, a crafted one, and text a spreadsheet reads as text
TEXTS = ["-exec isn't being passed all the files found by find", "=HYPERLINK(\"http://x\",\"y\")", "@SUM(A1)",
         "+1 for this", "\tindented", "what is a bank", "-1.5", "1e-3", "'quoted"]


def test_formula_like_text_is_marked_and_the_rest_left_alone():
    frame = pd.DataFrame({"query_id": ["q1", "q2", "q3", "q4", "q5", "q6", "q7", "q8", "q9"], "text": TEXTS,
                          "score": [-1.0, 2.0, 0.5, -3.0, 0.0, 1.0, 2.0, 3.0, 4.0]})
    safe = spreadsheet_safe(frame)
    assert safe["text"].tolist() == ["'-exec isn't being passed all the files found by find", "'=HYPERLINK(\"http://x\",\"y\")",
                                     "'@SUM(A1)", "'+1 for this", "'\tindented", "what is a bank", "-1.5", "1e-3", "'quoted"]
    assert safe["score"].tolist() == frame["score"].tolist()  # numbers stay numbers
    assert frame["text"].tolist() == TEXTS  # the caller's frame is not changed


def test_column_names_and_index_labels_are_marked_too():
    matrix = pd.DataFrame({"-run-a": [0.5], "bm25": [0.25]}, index=pd.Index(["=q"], name="query_id"))
    text = csv_bytes(matrix, index=True).decode()
    assert text.splitlines() == ["query_id,'-run-a,bm25", "'=q,0.5,0.25"]


def test_a_downloaded_csv_loads_back_as_the_log_it_came_from(tmp_path):
    log = pd.DataFrame({"query_id": ["q1", "-q2", "q3"], "text": ["-exec isn't being passed", "=1+1", "'quoted"]})
    path = tmp_path / "log.csv"
    path.write_bytes(csv_bytes(log))
    assert "'-exec isn't being passed" in path.read_text(encoding="utf-8")
    back = read_query_log(path)
    assert back["query_id"].tolist() == ["q1", "-q2", "q3"]
    assert back["text"].tolist() == ["-exec isn't being passed", "=1+1", "'quoted"]


def test_unmark_leaves_an_apostrophe_before_ordinary_text():
    assert unmark(pd.Series(["'tis the season", "'-x", "''-x"])).tolist() == ["'tis the season", "-x", "''-x"]


def test_every_csv_the_dashboard_serves_goes_through_csv_bytes():
    """One home for CSV downloads: a page that called ``to_csv`` itself would serve formulas again."""
    from pathlib import Path

    pages = Path(__file__).resolve().parents[2] / "pages"
    direct = [f"{p.name}:{i}" for p in sorted(pages.glob("*.py"))
              for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if ".to_csv(" in line]
    assert direct == []
    served = sum(p.read_text(encoding="utf-8").count("csv_bytes(") for p in pages.glob("*.py"))
    assert served >= 11  # Collection 1, Coverage 2, Exposure 5, Exposure evaluation 1, Latent 1, Suggestions 1
