"""#14's check at full scale: the project's own `eqi run` output for BM25 over the WordNet default log,
given back as a system's result log, is exactly the built-in BM25 exposure map (same exposing queries,
same ranks), so every EQI method scored against it gets the same RELQ."""
import numpy as np
import pytest
from typer.testing import CliRunner

from eqi_core.cli import app

pytestmark = [pytest.mark.data, pytest.mark.slow]


def test_eqi_run_bm25_as_a_result_log_is_the_builtin_map(shared_store, tmp_path, session_store_home):
    from eqi_core.exposure.distributed import compute_exposure_map
    from eqi_core.exposure.result_logs import result_log_id
    from eqi_core.loaders import load_collection

    trec = tmp_path / "bm25.wordnet.trec"
    result = CliRunner().invoke(app, ["run", "-c", "wordnet", "-r", "bm25", "-k", "100", "-o", str(trec)])
    assert result.exit_code == 0, result.output
    wordnet = load_collection("wordnet", shared_store)
    builtin, _ = compute_exposure_map(wordnet, "bm25", shared_store, 100)
    logged, info = compute_exposure_map(wordnet, result_log_id(trec), shared_store, 100)
    for field in ("q_idx", "d_idx", "rank0", "offsets"):
        assert np.array_equal(getattr(builtin, field), getattr(logged, field)), field
    assert not any("not in the" in n for n in info["notes"])  # every id of the run is known
