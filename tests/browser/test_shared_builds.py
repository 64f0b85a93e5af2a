"""Two dashboard sessions and a CLI run ask for the same index at once, on an empty store: it is
built once (the store's build journal says so) and all three get it. A 3,000-synset WordNet keeps
the build a few seconds long: long enough for the three to meet at the store's lock."""
import os
import subprocess
import sys

import pytest

from eqi_core.dashboard import start_dashboard
from eqi_core.store import ArtifactStore

pytestmark = pytest.mark.browser


def test_two_sessions_and_a_cli_build_one_index(browser, tmp_path):
    home = tmp_path / "fresh_home"
    with start_dashboard(home) as url:
        pages = [browser.new_context().new_page() for _ in range(2)]
        for p in pages:
            p.goto(f"{url}/?collection=wordnet:3000&ranker=minilm-l3-onnx&q=airfield", wait_until="commit")
        cli = subprocess.Popen([sys.executable, "-c", "from eqi_core.cli import main; main()", "index", "-c", "wordnet:3000",
                                "-r", "minilm-l3-onnx"], env={**os.environ, "EQI_HOME": str(home)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, encoding="utf-8")
        for p in pages:
            p.get_by_text("Logged query airfield", exact=False).first.wait_for(timeout=300_000)
        assert cli.wait(300) == 0, cli.stderr.read()[-500:]
        for p in pages:
            p.context.close()
    builds = ArtifactStore(home).builds()
    assert [b["kind"] for b in builds].count("embeddings") == 1, builds
    assert [b["kind"] for b in builds].count("collection") == 1, builds
