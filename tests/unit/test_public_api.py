"""The README's notebook example runs as written, using only the public API (on the fixture
collection instead of WordNet, so that it is quick)."""
import re
from pathlib import Path

import pytest

from tests.conftest import TINY_BEIR

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_example() -> str:
    text = README.read_text(encoding="utf-8")
    m = re.search(r"<!-- api-example[^>]*-->\s*```python\n(.*?)```", text, flags=re.S)
    assert m, "the README's API example block is marked with <!-- api-example -->"
    return m.group(1)


def test_the_example_uses_only_the_public_api():
    import eqi_core

    code = readme_example()
    assert "import eqi_core as eqi" in code and "from eqi_core" not in code
    used = set(re.findall(r"\beqi\.([A-Za-z_]+)", code))
    assert used <= set(eqi_core.__all__), used - set(eqi_core.__all__)


@pytest.mark.slow
def test_the_readme_example_runs(tmp_path, capsys):
    code = readme_example().replace('eqi.load_collection("wordnet", store)', f'eqi.load_collection("beir:{TINY_BEIR}", store)')
    code = code.replace("eqi.ArtifactStore()", f"eqi.ArtifactStore({str(tmp_path / 'store')!r})")
    exec(compile(code, "README example", "exec"), {})
    out = capsys.readouterr().out
    assert "RELQ_RBP,RBP(0.5,0.9)" in out and "tasc_max" in out and "decoded query" in out
    assert "gamma_dq" in out and "places up" in out and "change" in out
    assert "original query" in out and "suggester (PRF)" in out and "gold_rank" in out


def test_qrels_from_files_and_dicts(tmp_path):
    """``Qrels`` (the README's "load with Qrels.from_file(path)"): TREC and TSV files, dicts both ways, one
    query's judgments; a bad grade is one line naming the file and the line."""
    import eqi_core as eqi

    trec = tmp_path / "qrels.txt"
    trec.write_text("q1 0 d1 2\nq1 0 d2 0\n7 0 d3 1\n", encoding="utf-8")
    tsv = tmp_path / "qrels.tsv"
    tsv.write_text("query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t0\n7\td3\t1\n", encoding="utf-8")
    want = {"q1": {"d1": 2, "d2": 0}, "7": {"d3": 1}}
    for path in (trec, tsv):
        qrels = eqi.Qrels.from_file(path)
        assert qrels.to_dict() == want and len(qrels) == 3
        assert qrels.for_query(7) == {"d3": 1} and qrels.for_query("absent") == {}
    assert eqi.Qrels.from_dict(want).to_dict() == want
    trec.write_text("q1 0 d1 2\nq1 0 d2 high\n", encoding="utf-8")
    with pytest.raises(eqi.DataError, match=r"qrels.txt: line 2: relevance 'high'"):
        eqi.Qrels.from_file(trec)
