import numpy as np
import pandas as pd

from eqi_core.runs import Run


def test_from_topk_skips_missing():
    run = Run.from_topk("r", ["a", "b"], np.array(["d0", "d1", "d2"]),
                        np.array([[2, 0], [1, -1]]), np.array([[0.9, 0.5], [0.7, 0.0]]))
    assert run.frame.values.tolist() == [["a", "d2", 1, 0.9], ["a", "d0", 2, 0.5], ["b", "d1", 1, 0.7]]


def test_trec_round_trip(tmp_path):
    run = Run.from_dict("my run", {"q1": {"d1": 3.0, "d2": 1.5}, "q2": {"d3": 0.25}})
    path = run.to_trec(tmp_path / "out.trec")
    assert path.read_text(encoding="utf-8").splitlines()[0] == "q1 Q0 d1 1 3.000000 my_run"
    back = Run.from_trec(path)
    assert back.name == "my_run"
    pd.testing.assert_frame_equal(back.frame, run.frame)
    assert not list(tmp_path.glob(".out.trec*"))  # no temporary left behind


def test_trec_eval_tie_break_and_tie_count():
    run = Run("r", pd.DataFrame({"query_id": ["q"] * 3, "doc_id": ["a", "c", "b"], "rank": [1, 2, 3],
                                 "score": [1.0, 1.0, 2.0]}))
    assert run.tied_groups() == 1
    # trec_eval: score descending, then doc_id descending
    assert list(run.trec_eval_order().frame["doc_id"]) == ["b", "c", "a"]


def test_one_querys_trec_eval_order_is_the_whole_runs_for_that_query():
    """The drill-down re-ranks one query's list, not the whole run: the same rows, ranks and ties."""
    frame = pd.DataFrame({"query_id": ["q2", "q1", "q1", "q2", "q1", "q2"], "doc_id": ["x", "a", "c", "y", "b", "z"],
                          "rank": [1, 1, 2, 2, 3, 3], "score": [0.5, 1.0, 1.0, 0.9, 2.0, 0.5]})
    run = Run("r", frame)
    for query_id in ("q1", "q2", "q3"):
        whole = run.trec_eval_order().for_query(query_id).reset_index(drop=True)
        pd.testing.assert_frame_equal(run.query_in_trec_eval_order(query_id), whole)
    assert run.query_in_trec_eval_order("q1")["doc_id"].tolist() == ["b", "c", "a"]
    assert run.query_in_trec_eval_order("q2")[["doc_id", "rank"]].values.tolist() == [["y", 1], ["z", 2], ["x", 3]]


def test_file_order_kept_and_ranks_renumbered(tmp_path):
    f = tmp_path / "r.trec"
    f.write_text("q1 Q0 x 5 1.0 t\nq1 Q0 y 9 1.0 t\nq2 Q0 z 1 3 t\n", encoding="utf-8")
    run = Run.from_trec(f)
    assert run.for_query("q1")["doc_id"].tolist() == ["x", "y"] and run.for_query("q1")["rank"].tolist() == [1, 2]
    assert run.depth() == 2 and run.query_ids == ["q1", "q2"]
