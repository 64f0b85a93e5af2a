"""Tools that say one line or nothing: progress lines in log files, figure export without
tracebacks, a missing package named as such."""
import io
import subprocess
import sys
from pathlib import Path

import plotly.graph_objects as go
import pytest

from eqi_core.progress import line_progress
from tests.conftest import TINY_BEIR

ROOT = Path(__file__).resolve().parents[2]


def test_line_progress_prints_start_steps_and_end():
    out = io.StringIO()
    report = line_progress("training", "step", stream=out, every_seconds=1e9, every_share=0.25)
    for done in range(0, 101):
        report(done, 100)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("[eqi] training: 0/100 step (0%)") and lines[-1].startswith("[eqi] training: 100/100 step (100%)")
    assert 5 <= len(lines) <= 6  # 0, 25, 50, 75, 100 (+ at most one rounding step)


def test_line_progress_counts_time_from_its_making_not_its_first_report(monkeypatch):
    """A first chunk of long passages can take half a minute: its report must say so (it said 0 s)."""
    from eqi_core import progress as progress_mod

    clock = iter([100.0, 130.0, 145.0])
    monkeypatch.setattr(progress_mod.time, "monotonic", lambda: next(clock))
    out = io.StringIO()
    report = line_progress("indexing", "passage", stream=out)  # made at t = 100
    report(1024, 1500)  # t = 130
    report(1500, 1500)  # t = 145
    first, last = out.getvalue().splitlines()
    assert first == "[eqi] indexing: 1,024/1,500 passage (68%), 30 s, ~14 s left"
    assert last == "[eqi] indexing: 1,500/1,500 passage (100%), 45 s"


def test_a_reporter_handed_several_steps_times_each_from_its_own_start(monkeypatch):
    """prepare_exposure hands one reporter the passages' encoding, then the queries', then the map:
    the second step's time left once counted the first step's time as its own (here: 13 min left
    instead of 60 s). A new step (another total, or a count that goes back) restarts the clock."""
    from eqi_core import progress as progress_mod

    clock = iter([0.0, 60.0, 120.0, 120.0, 130.0, 150.0, 150.0, 151.0])
    monkeypatch.setattr(progress_mod.time, "monotonic", lambda: next(clock))
    out = io.StringIO()
    report = line_progress("preparing", "item", stream=out)  # made at t = 0
    report(7000, 14000)  # t = 60
    report(14000, 14000)  # t = 120: step 1 done
    report(1000, 7000)  # t = 120 (step 2 starts) then 130
    report(7000, 7000)  # t = 150
    report(0, 7000)  # a third step with the same total: the count went back; t = 150, 151
    lines = out.getvalue().splitlines()
    assert lines[:2] == ["[eqi] preparing: 7,000/14,000 item (50%), 60 s, ~60 s left",
                         "[eqi] preparing: 14,000/14,000 item (100%), 2.0 min"]
    assert lines[2] == "[eqi] preparing: step 2: 1,000/7,000 item (14%), 10 s, ~60 s left"  # not 2.2 min, ~13 min
    assert lines[3] == "[eqi] preparing: step 2: 7,000/7,000 item (100%), 30 s"
    assert lines[4] == "[eqi] preparing: step 3: 0/7,000 item (0%), 1 s"


def test_steps_by_hand(monkeypatch):
    from eqi_core import progress as progress_mod

    clock = iter([5.0, 9.0])
    monkeypatch.setattr(progress_mod.time, "monotonic", lambda: next(clock))
    steps = progress_mod.Steps()  # t = 5
    assert steps.see(0, 10) and steps.step == 1 and steps.prefix == "" and steps.started == 5.0
    assert not steps.see(4, 10) and not steps.see(10, 10)
    assert steps.see(3, 20) and steps.step == 2 and steps.prefix == "step 2: " and steps.started == 9.0


def test_encoding_reports_its_start():
    from eqi_core.encoders import encode_in_chunks

    calls = []
    encode_in_chunks(["a", "bb", "ccc"], lambda c: __import__("numpy").zeros((len(c), 2)), 2,
                     progress=lambda done, total: calls.append((done, total)), chunk=2)
    assert calls == [(0, 3), (2, 3), (3, 3)]


def test_cli_in_a_log_file_prints_progress_lines(tmp_path):
    """stderr is a file: no tqdm bar (tqdm disables itself there), progress lines instead."""
    log = tmp_path / "index.log"
    with open(log, "w", encoding="utf-8") as fh:
        done = subprocess.run([sys.executable, "-m", "eqi_core.cli", "index", "-c", f"beir:{TINY_BEIR}", "-r", "minilm-l3-onnx"],
                              stdout=subprocess.PIPE, stderr=fh, text=True, encoding="utf-8", cwd=ROOT, timeout=300,
                              env={**__import__("os").environ, "EQI_HOME": str(tmp_path / "home")})
    assert done.returncode == 0, log.read_text(encoding="utf-8")
    text = log.read_text(encoding="utf-8")
    assert "[eqi] indexing" in text and "12/12 passage (100%)" in text
    assert "Traceback" not in text


@pytest.mark.slow
def test_figure_export_prints_no_traceback(tmp_path, capfd):
    """Two figures through one kaleido browser: both PNGs and HTMLs written (or, without a browser, one line)."""
    from eqi_core.figure_export import write_figure_files

    figures = {f"f{i}": go.Figure(go.Bar(x=["a", "b"], y=[1, i + 2])) for i in range(2)}
    out = tmp_path / "figs"
    try:
        written = write_figure_files(figures, out)
        assert written == [out / n for n in ("f0.html", "f0.png", "f1.html", "f1.png")]
        assert all((out / f"f{i}.png").read_bytes().startswith(b"\x89PNG") for i in range(2))
        assert (out / "f0.png").read_bytes() != (out / "f1.png").read_bytes()
        assert "plotly" in (out / "f0.html").read_text(encoding="utf-8")
    except Exception as exc:  # no browser for kaleido here: still one line, never a traceback
        assert "\n" not in str(exc) and not out.exists()
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err and "JSONError" not in captured.err


def test_a_figure_batch_that_cannot_render_writes_nothing(tmp_path, monkeypatch):
    from eqi_core import figure_export
    from eqi_core.errors import FigureExportError
    from eqi_core.figure_export import FigureRenderer, write_figure_files

    monkeypatch.setattr(figure_export, "RENDERER", FigureRenderer())  # not the process's, which may hold a browser
    monkeypatch.setenv("BROWSER_PATH", "/nonexistent/chromium")
    with pytest.raises(FigureExportError, match="apt install chromium"):
        write_figure_files({f"f{i}": go.Figure() for i in range(2)}, tmp_path / "figs")
    assert list(tmp_path.iterdir()) == []


def test_missing_package_is_named_not_bad_input(monkeypatch, capsys):
    from eqi_core import cli

    def boom(*a, **k):
        raise ModuleNotFoundError("No module named 'umap'", name="umap")

    monkeypatch.setattr(cli, "app", boom)
    with pytest.raises(SystemExit) as exit_info:
        cli.main()
    err = capsys.readouterr().err
    assert exit_info.value.code == 4 and "missing dependency" in err and "'umap' is not installed" in err
