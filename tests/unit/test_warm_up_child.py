"""The dashboard's idle warm-up child must not outlive the server that started it (it would keep
writing numba's cache into a store that is being removed, as `eqi bench first-visit` once found)."""
import os
import subprocess
import sys
import time


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_the_child_exits_when_its_parent_is_gone():
    child = ("from eqi_core.projection import exit_with_parent; exit_with_parent(); "
             "import time; time.sleep(60)")
    # a parent that starts the child, naming itself as the server does, prints the child's pid and exits
    # after a second: on a busy machine before the child has imported anything (the case that once failed)
    parent = subprocess.run(["bash", "-c", f'EQI_PARENT_PID=$$ {sys.executable} -c "{child}" >/dev/null 2>&1 & echo $!; sleep 1'],
                            capture_output=True, text=True, encoding="utf-8", timeout=30, env={**os.environ}, check=True)
    pid = int(parent.stdout.split()[0])
    deadline = time.time() + 10
    while _alive(pid) and time.time() < deadline:
        time.sleep(0.2)
    assert not _alive(pid), "the child kept running after its parent exited"


def test_a_child_whose_parent_is_gone_before_it_starts_watching_exits_at_once():
    """The parent named in EQI_PARENT_PID is already gone: the child must not watch its new parent."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    code = ("from eqi_core.projection import exit_with_parent; exit_with_parent(); import time; time.sleep(30)")
    started = time.time()
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "EQI_PARENT_PID": str(gone.pid)},
                          timeout=60, check=False)
    assert done.returncode == 0 and time.time() - started < 25


def test_kernels_are_cached_in_the_store_even_when_numba_was_imported_first(tmp_path):
    """`import bm25s` loads numba before any kernel: the cache must still go to the store, where the
    warm-up child puts it, not to __pycache__ beside the sources."""
    code = ("import bm25s, sys; assert 'numba' in sys.modules; "
            "from eqi_core.rankers.topk import warm_up; warm_up(); "
            "from numba.core import config; print(config.CACHE_DIR)")
    env = {**os.environ, "EQI_HOME": str(tmp_path)}
    env.pop("NUMBA_CACHE_DIR", None)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, encoding="utf-8", timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(tmp_path / "numba-cache")
    cached = {p.name.split("-")[0] for p in (tmp_path / "numba-cache").rglob("*.nbi")}
    assert {"topk._select_rows", "topk._rescore"} <= cached, cached


def test_umaps_own_kernels_get_the_file_cache():
    """umap-learn jits its kernels without cache=True; every process compiled them again (~29 CPU-s of a
    tiny fit with a warm cache). After ``_umap_class`` those not compiled at import use numba's file cache."""
    from numba.core.caching import FunctionCache
    from numba.core.dispatcher import Dispatcher

    from eqi_core.projection import _umap_class

    _umap_class()
    import umap.umap_
    import umap.utils

    for kernel in (umap.utils.fast_knn_indices, umap.utils.submatrix, umap.umap_.smooth_knn_dist,
                   umap.umap_.compute_membership_strengths):
        assert isinstance(kernel, Dispatcher) and isinstance(kernel._cache, FunctionCache), kernel
