"""Loaders and runs on the real collections in ../shared/data (skipped when it is absent)."""
import ir_measures
import pytest

from eqi_core.loaders import load_collection
from eqi_core.rankers import build_ranker, run_all_queries
from eqi_core.runs import Run
from tests.conftest import SHARED_DATA, shared_dataset

pytestmark = pytest.mark.data

# ../shared/data/README.md: published nDCG@10 of each run with the official qrels
PUBLISHED_NDCG10 = {"bm25": 0.5058, "bm25-rm3": 0.5216, "tasb": 0.7210, "splade-pp-ed": 0.7308,
                    "openai-ada2": 0.7035, "repllama": 0.7384}


@pytest.mark.parametrize("name,passages,queries,qrels", [
    ("scifact", 5183, 1109, 339), ("trec-dl19-passage", 14581, 43, 9260), ("cranfield", 1400, 225, 1837),
])
def test_counts_match_the_readme(name, passages, queries, qrels):
    c = load_collection(str(shared_dataset(name)))
    assert (len(c.passages), len(c.queries), len(c.qrels)) == (passages, queries, qrels)


def test_dl19_qrels_without_text_are_reported():
    c = load_collection(str(shared_dataset("trec-dl19-passage")))
    assert any("4,923 of 9,260 judgments name passages that are not in the corpus" in n for n in c.notes)


def test_scifact_train_split():
    c = load_collection(f"beir:{shared_dataset('scifact')}#train")
    assert len(c.qrels) == 919 and c.qrels["query_id"].nunique() == 809


@pytest.fixture(scope="module")
def dl19_runs():
    folder = shared_dataset("trec-dl19-passage") / "runs"
    return {f.name.split(".")[0]: Run.from_trec(f) for f in sorted(folder.glob("*.trec"))}


def test_six_run_files_parse(dl19_runs):
    assert set(dl19_runs) == set(PUBLISHED_NDCG10)
    assert all(len(r.query_ids) == 43 for r in dl19_runs.values())
    assert dl19_runs["repllama"].depth() == 1000 and dl19_runs["bm25"].depth() == 100


def test_repllama_ties_are_noticed(dl19_runs):
    assert dl19_runs["repllama"].tied_groups() > 100


@pytest.mark.parametrize("name", sorted(PUBLISHED_NDCG10))
def test_ndcg10_equals_published(dl19_runs, name):
    qrels = load_collection(str(shared_dataset("trec-dl19-passage"))).qrels
    value = ir_measures.calc_aggregate([ir_measures.nDCG @ 10], qrels, dl19_runs[name].frame)[ir_measures.nDCG @ 10]
    assert round(value, 4) == PUBLISHED_NDCG10[name]


def test_cranfields_passages_without_text_are_noted():
    c = load_collection(str(shared_dataset("cranfield")))
    assert "2 of 1,400 passages have no text ('471', '995'): kept, but no ranker can match them by their words" in c.notes
    assert c.judgments["125"]["995"] == 2  # judged relevant, yet no ranker can find it by its words


def test_live_bm25_on_cranfield(shared_store):
    c = load_collection(str(shared_dataset("cranfield")), shared_store)
    run = run_all_queries(build_ranker("bm25", c, shared_store), c, shared_store, k=100)
    ndcg = ir_measures.calc_aggregate([ir_measures.nDCG @ 10], c.qrels, run.frame)[ir_measures.nDCG @ 10]
    assert 0.25 < ndcg < 0.6  # BM25 on Cranfield is typically ~0.3-0.45 nDCG@10


def test_tasc_on_dl19_six_runs(dl19_runs):
    """The six real runs: TaSC is bounded by the metric mean, and max aggregation never exceeds mean."""
    from eqi_core.coverage import compute_matrix, tasc_table
    from eqi_core.rankers import release_date_for

    qrels = load_collection(str(shared_dataset("trec-dl19-passage"))).qrels
    m = compute_matrix(dl19_runs, qrels, "ndcg_cut_10")
    assert m.values.shape == (43, 6)
    for mode in ("chronological", "all-others"):
        table, _ = tasc_table(m.values, mode, {r: release_date_for(r) for r in dl19_runs}, baseline="bm25")
        rows = table.dropna(subset=["tasc_max"])
        assert (rows["tasc_max"] <= rows["tasc_mean"] + 1e-12).all()
        assert (rows["tasc_mean"] <= rows["mean_metric"] + 1e-12).all()
        assert ((rows["tasc_max_lo"] <= rows["tasc_max"]) & (rows["tasc_max"] <= rows["tasc_max_hi"])).all()
    chron, _ = tasc_table(m.values, "chronological", {r: release_date_for(r) for r in dl19_runs}, baseline="bm25")
    assert chron["ranker"].tolist() == ["bm25", "bm25-rm3", "tasb", "splade-pp-ed", "openai-ada2", "repllama"]


def test_dl19_passages_with_the_ms_marco_log():
    """The realistic second demo: TREC DL 2019 passages searched by the MS MARCO dev queries."""
    from eqi_core.loaders.registry import web_log_demo

    shared_dataset("trec-dl19-passage")
    spec = web_log_demo([SHARED_DATA])
    assert spec and spec.endswith("+log:" + str(SHARED_DATA / "query-logs" / "msmarco-passage-dev-subset.tsv"))
    c = load_collection(spec)
    assert (len(c.passages), len(c.queries), len(c.qrels)) == (14_581, 6_980, 0)
    assert any("9,260 judgments" in n and "dropped" in n for n in c.notes)


def test_the_decoder_recipe_finds_the_query_logs_without_being_told_where():
    """`eqi decoder-corpus` (and the evaluations) without --data: the default folder holds the logs."""
    from eqi_core.cli.latent import _shared_data
    from eqi_core.decoder.corpus import default_recipe

    shared_dataset("query-logs")
    recipe = default_recipe(_shared_data())
    assert len(recipe.query_logs) >= 20 and set(recipe.collections) >= {"wordnet-full", "trec-dl19-passage", "scifact", "cranfield"}
