"""Nothing the workbench runs sends anything off the machine: onnxruntime (1.29 and later) uploads usage
events to Microsoft on Linux under a device id it writes to ~/.cache/Microsoft, unless
ORT_DISABLE_TELEMETRY is set before it starts; ``import eqi_core`` sets it."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

# onnxruntime collects nothing where one of these is set (its build checks them, reading a CI machine's
# events as noise; plain CI=true is one); the project's CI sets CI, so each run here clears them, or the
# check that the opt-out is ours could not fail and the one below could not pass.
CI_MARKERS = ("CI", "TF_BUILD", "GITHUB_ACTIONS", "GITLAB_CI", "CIRCLECI", "TRAVIS", "JENKINS_URL", "CODEBUILD_BUILD_ID",
              "BUILDKITE", "TEAMCITY_VERSION", "APPVEYOR", "BITBUCKET_BUILD_NUMBER")
ENCODE = ("import eqi_core\nfrom eqi_core.rankers import load_encoder\n"
          "print(load_encoder('minilm-l3-onnx').encode(['a river bank']).shape)")


def _run(home: Path, **env: str) -> Path:
    """Encode one text with the onnxruntime encoder in a fresh process whose home is ``home``; returns
    where onnxruntime keeps its device id and event cache there."""
    clean = {k: v for k, v in os.environ.items() if k not in ("ORT_DISABLE_TELEMETRY", *CI_MARKERS)}
    done = subprocess.run([sys.executable, "-c", ENCODE], env={**clean, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"),
                                                               "EQI_HOME": os.environ.get("EQI_HOME", str(home / "eqi")), **env},
                          capture_output=True, text=True, encoding="utf-8", timeout=300, check=False)
    assert done.returncode == 0 and "(1, 384)" in done.stdout, done.stderr[-2000:]
    return home / ".cache" / "Microsoft"


def test_importing_eqi_core_keeps_onnxruntime_from_collecting_events(tmp_path):
    assert not _run(tmp_path / "ours").exists()


def test_the_check_can_fail_onnxruntime_collects_when_allowed(tmp_path):
    """The same process with the opt-out turned off: onnxruntime writes its device id (so the test above
    would see one if the opt-out stopped working)."""
    collected = _run(tmp_path / "allowed", ORT_DISABLE_TELEMETRY="0")
    assert (collected / "DeveloperTools" / ".onnxruntime" / "deviceid").is_file(), \
        f"no device id written; environment names: {sorted(os.environ)}"


@pytest.mark.parametrize("marker", ["CI", "GITHUB_ACTIONS"])
def test_a_ci_machine_is_not_mistaken_for_our_opt_out(tmp_path, marker):
    """The markers above do turn onnxruntime's collection off (were they not what kept CI's run from
    writing a device id, clearing them would not make the test above pass)."""
    assert not _run(tmp_path / "ci", ORT_DISABLE_TELEMETRY="0", **{marker: "true"}).exists()


def test_make_runs_network_url_is_found_without_sending(monkeypatch):
    """`make run` prints the address other machines reach the dashboard at (Streamlit no longer does,
    its config naming the server address); it asks the kernel, and sends nothing."""
    import socket as real

    from eqi_core import dashboard

    calls = []

    class Udp:
        def __init__(self, family, kind):
            assert (family, kind) == (real.AF_INET, real.SOCK_DGRAM)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def connect(self, address):
            calls.append(("connect", address))

        def getsockname(self):
            return ("192.0.2.7", 40000)

        def __getattr__(self, name):  # send, sendto, ...: a packet would leave
            raise AssertionError(f"network_url called socket.{name}")

    monkeypatch.setattr(dashboard.socket, "socket", Udp)
    assert dashboard.network_url(8600) == "http://192.0.2.7:8600" and calls == [("connect", ("10.255.255.255", 1))]

    def unreachable(*args):
        raise OSError("Network is unreachable")

    monkeypatch.setattr(dashboard.socket, "socket", unreachable)
    assert dashboard.network_url(8600) is None
