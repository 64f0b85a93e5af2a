import os
import threading

import pytest

from eqi_core.store import ArtifactStore, params_key


def write_file(name="data.txt", text="hello"):
    def build(tmp):
        (tmp / name).write_text(text, encoding="utf-8")
        return {"chars": len(text)}
    return build


def test_built_once_then_reused(store):
    calls = []

    def build(tmp):
        calls.append(1)
        (tmp / "a.txt").write_text("x" * 100, encoding="utf-8")

    a1 = store.get_or_build("thing", {"p": 1}, build)
    a2 = store.get_or_build("thing", {"p": 1}, build)
    assert len(calls) == 1
    assert a1.path == a2.path and a1.file("a.txt").read_text(encoding="utf-8") == "x" * 100
    assert a2.manifest["params"] == {"p": 1}
    assert a2.manifest["files"]["a.txt"]["size"] == 100


def test_reused_across_store_instances(tmp_path):
    calls = []
    for _ in range(2):
        s = ArtifactStore(tmp_path / "home")
        s.get_or_build("thing", {"p": 2}, lambda tmp: calls.append(1) or (tmp / "f").write_text("y", encoding="utf-8"))
    assert len(calls) == 1


def test_different_params_different_artifacts(store):
    a = store.get_or_build("thing", {"p": 1}, write_file())
    b = store.get_or_build("thing", {"p": 2}, write_file())
    assert a.key != b.key and params_key("thing", {"p": 1}) == a.key


def test_failed_build_leaves_nothing(store):
    def boom(tmp):
        (tmp / "half.txt").write_text("partial", encoding="utf-8")
        raise RuntimeError("killed mid-build")

    with pytest.raises(RuntimeError):
        store.get_or_build("thing", {"p": 3}, boom)
    assert store.load("thing", {"p": 3}) is None
    leftovers = [p for p in (store.root / "thing").iterdir() if not p.name.endswith(".lock")]
    assert leftovers == []


@pytest.mark.parametrize("damage", ["truncate", "flip", "delete", "manifest"])
def test_corrupt_artifact_detected_and_rebuilt(store, damage):
    art = store.get_or_build("thing", {"p": 4}, write_file(text="abcdefgh"))
    f = art.file("data.txt")
    if damage == "truncate":
        f.write_text("abc", encoding="utf-8")
    elif damage == "flip":
        f.write_text("abcdefgX", encoding="utf-8")  # same size, wrong checksum
    elif damage == "delete":
        f.unlink()
    else:
        art.file("manifest.json").write_text("{not json", encoding="utf-8")
    assert store.load("thing", {"p": 4}) is None
    rebuilt = store.get_or_build("thing", {"p": 4}, write_file(text="abcdefgh"))
    assert rebuilt.file("data.txt").read_text(encoding="utf-8") == "abcdefgh"


def test_concurrent_builders_build_once(store):
    calls, results = [], []

    def slow(tmp):
        calls.append(1)
        threading.Event().wait(0.3)
        (tmp / "f").write_text("z", encoding="utf-8")

    threads = [threading.Thread(target=lambda: results.append(store.get_or_build("thing", {"p": 5}, slow)))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len({r.path for r in results}) == 1


def _dead_pid() -> int:
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid  # exited and reaped: no such process now


def test_stale_temporary_of_killed_builder_is_swept(store):
    from eqi_core.store import temporary_name

    parent = store.root / "thing"
    parent.mkdir(parents=True)
    mine = temporary_name("otherkey").split(".")
    stale = parent / ".".join(mine[:3] + [str(_dead_pid())] + mine[4:])  # same host, owner gone
    stale.mkdir()
    (stale / "junk").write_text("left by a killed process", encoding="utf-8")
    store.get_or_build("thing", {"p": 6}, write_file())
    assert not stale.exists()


def test_temporary_of_a_live_builder_of_another_key_is_kept(store):
    from eqi_core.store import params_key, sweep_abandoned, temporary_name

    parent = store.root / "thing"
    parent.mkdir(parents=True)
    live_other = parent / temporary_name("otherkey")  # this process is alive: a build in progress
    live_other.mkdir()
    foreign = parent / ".somekey.another-host.1.abcd1234.tmp"  # another host's build on a shared file system
    foreign.mkdir()
    own_key = params_key("thing", {"p": 9})
    own_left = parent / temporary_name(own_key)  # our own key's leftover: we hold its lock
    own_left.mkdir()
    removed = sweep_abandoned(parent, own_key)
    assert removed == [own_left] and live_other.exists() and foreign.exists()


def test_atomic_write_leaves_old_file_on_failure(tmp_path):
    from eqi_core.store import atomic_path, atomic_write

    target = tmp_path / "out.json"
    atomic_write(target, "old")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half", encoding="utf-8")
        raise RuntimeError("killed mid-write")
    assert target.read_text(encoding="utf-8") == "old" and [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_build_journal_records_each_build_once(store):
    store.get_or_build("thing", {"p": 7}, write_file())
    store.get_or_build("thing", {"p": 7}, write_file())
    store.get_or_build("thing", {"p": 8}, write_file())
    builds = store.builds()
    assert [b["kind"] for b in builds] == ["thing", "thing"] and builds[0]["pid"] == os.getpid()
