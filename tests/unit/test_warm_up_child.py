"""The dashboard's idle warm-up child must not outlive the server that started it (it would keep
writing numba's cache into a store that is being removed, as `eqi bench first-visit` once found)."""
import os
import subprocess
import sys
import time


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_the_child_exits_when_its_parent_is_gone():
    child = ("from eqi_core.projection import exit_with_parent; exit_with_parent(); "
             "import time; time.sleep(60)")
    # a parent that starts the child, prints its pid and exits at once
    parent = subprocess.run(["bash", "-c", f'{sys.executable} -c "{child}" >/dev/null 2>&1 & echo $!; sleep 1'],
                            capture_output=True, text=True, timeout=30, env={**os.environ}, check=True)
    pid = int(parent.stdout.split()[0])
    deadline = time.time() + 10
    while _alive(pid) and time.time() < deadline:
        time.sleep(0.2)
    assert not _alive(pid), "the child kept running after its parent exited"
