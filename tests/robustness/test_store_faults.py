"""Store integrity under faults: a builder killed with SIGKILL, concurrent builder processes,
corrupt artifacts (detected by checksum, rebuilt)."""
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from eqi_core.store import ArtifactStore

BUILDER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from eqi_core.store import ArtifactStore

    root, mode, log = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    key = int(sys.argv[4]) if len(sys.argv) > 4 else 1

    def build(tmp):
        with open(log, "a") as fh:
            fh.write("build\\n")
        (tmp / "part1.bin").write_bytes(b"x" * 1_000_000)
        if mode == "hang":
            print("building", flush=True)
            time.sleep(60)  # killed here, half-written
        time.sleep({"slow": 0.5, "slower-than-sweep-age": 8.0}.get(mode, 0))
        (tmp / "part2.bin").write_bytes(b"y" * 1000)

    art = ArtifactStore(root).get_or_build("thing", {"p": key}, build)
    print("done", art.key, flush=True)
""")


def run_builder(tmp_path: Path, mode: str, key: int = 1) -> subprocess.Popen:
    """Start a builder process. The script is written once per test: rewriting it for each process
    let a slow-starting one read it while the next write had truncated it (an empty script exits 0
    and prints nothing, seen once on a busy CI machine)."""
    script = tmp_path / "builder.py"
    if not script.exists():
        script.write_text(BUILDER, encoding="utf-8")
    return subprocess.Popen([sys.executable, str(script), str(tmp_path / "store"), mode, str(tmp_path / "builds.log"),
                             str(key)],
                            stdout=subprocess.PIPE, text=True, encoding="utf-8", cwd=Path(__file__).resolve().parents[2])


def test_sigkill_mid_build_leaves_a_usable_store(tmp_path):
    proc = run_builder(tmp_path, "hang")
    assert proc.stdout.readline().strip() == "building"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    store = ArtifactStore(tmp_path / "store")
    assert store.load("thing", {"p": 1}) is None  # nothing half-written is visible
    assert list((tmp_path / "store" / "thing").glob(".*.tmp"))  # the killed builder's temporary is still there
    done = run_builder(tmp_path, "fast")
    assert done.stdout.readline().startswith("done")
    done.wait(30)
    art = store.load("thing", {"p": 1})
    assert art is not None and art.file("part2.bin").read_bytes() == b"y" * 1000
    assert not list((tmp_path / "store" / "thing").glob(".*.tmp"))  # repaired


def test_concurrent_builder_processes_build_once(tmp_path):
    procs = [run_builder(tmp_path, "slow") for _ in range(3)]
    outputs = [p.communicate(timeout=60)[0] for p in procs]
    assert all(o.startswith("done") for o in outputs), outputs
    assert len({o.split()[1] for o in outputs}) == 1
    assert (tmp_path / "builds.log").read_text(encoding="utf-8").count("build") == 1


def test_concurrent_builds_of_different_keys_all_succeed(tmp_path):
    """Regression: a build of another key of the same kind used to delete every temporary older
    than 5 s, so any build slower than that failed when a second one started."""
    first = run_builder(tmp_path, "slower-than-sweep-age", key=1)
    time.sleep(6.0)  # the first build's temporary is now older than the old 5 s sweep age
    others = [run_builder(tmp_path, "slower-than-sweep-age", key=k) for k in (2, 3)]
    outputs = [p.communicate(timeout=90)[0] for p in [first, *others]]
    assert all(o.startswith("done") for o in outputs), outputs
    store = ArtifactStore(tmp_path / "store")
    for key in (1, 2, 3):
        art = store.load("thing", {"p": key})
        assert art is not None and art.file("part2.bin").read_bytes() == b"y" * 1000
    assert not list((tmp_path / "store" / "thing").glob(".*.tmp"))


def test_corrupt_file_detected_and_rebuilt_across_processes(tmp_path):
    first = run_builder(tmp_path, "fast")
    first.communicate(timeout=60)
    store = ArtifactStore(tmp_path / "store")
    art = store.load("thing", {"p": 1})
    with open(art.file("part1.bin"), "r+b") as fh:  # flip one byte: same size, wrong checksum
        fh.seek(500)
        fh.write(b"z")
    assert store.load("thing", {"p": 1}) is None
    again = run_builder(tmp_path, "fast")
    assert again.communicate(timeout=60)[0].startswith("done")
    assert (tmp_path / "builds.log").read_text(encoding="utf-8").count("build") == 2
    assert store.load("thing", {"p": 1}) is not None


def test_sigkill_during_real_indexing_then_repair(tmp_path):
    """Kill `eqi index` while it encodes the default collection; the next run repairs and completes."""
    import os as _os

    env = {**_os.environ, "EQI_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "-c", "from eqi_core.cli import main; main()", "index", "-c", "wordnet:2000", "-r", "minilm-l3-onnx"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    emb_dir = tmp_path / "home" / "embeddings"
    deadline = time.time() + 120
    while time.time() < deadline and not (emb_dir.exists() and list(emb_dir.glob(".*.tmp"))):
        time.sleep(0.05)  # wait until encoding has started writing into its temporary folder
    assert proc.poll() is None, "indexing finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    store = ArtifactStore(tmp_path / "home")
    assert store.list("embeddings") == []  # no half-written embeddings are visible
    for stale in emb_dir.glob(".*.tmp"):
        os.utime(stale, (time.time() - 60, time.time() - 60))
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, encoding="utf-8", timeout=300)
    assert done.returncode == 0, done.stderr[-500:]
    assert len(store.list("embeddings")) == 1 and not list(emb_dir.glob(".*.tmp"))


def test_sigkill_during_training_then_repair(tmp_path):
    """Kill `eqi train-exposure` mid-training; no head is visible; the next run trains and stores it."""
    from tests.conftest import TINY_BEIR

    env = {**os.environ, "EQI_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1"}
    base = [sys.executable, "-c", "from eqi_core.cli import main; main()", "train-exposure", "-c", f"beir:{TINY_BEIR}",
            "-r", "minilm-l3-onnx", "--train-passages", "4"]
    proc = subprocess.Popen(base + ["--steps", "200000"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    heads = tmp_path / "home" / "exposure-head"
    deadline = time.time() + 120
    while time.time() < deadline and not (heads.exists() and list(heads.glob(".*.tmp"))):
        time.sleep(0.05)
    time.sleep(1.0)  # inside the training loop
    assert proc.poll() is None
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    store = ArtifactStore(tmp_path / "home")
    assert store.list("exposure-head") == []
    for stale in heads.glob(".*.tmp"):
        os.utime(stale, (time.time() - 60, time.time() - 60))
    done = subprocess.run(base + ["--steps", "50"], env=env, capture_output=True, text=True, encoding="utf-8", timeout=300)
    assert done.returncode == 0, done.stderr[-500:]
    assert len(store.list("exposure-head")) == 1 and not list(heads.glob(".*.tmp"))
