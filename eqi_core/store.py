"""Artifact store: everything expensive is built once, keyed by what it was made from.

An artifact is a directory ``<EQI_HOME>/<kind>/<key>/`` holding its files plus ``manifest.json``
(the parameters that made it, the artifacts it was built from, and a SHA-256 of every file).
The key is a content hash of ``kind`` + parameters, so the same inputs reuse the same artifact.

Writes are atomic: a builder fills a private temporary directory beside the target, the
manifest is written last, and the directory is renamed into place under a file lock, so a
crash leaves either nothing or a complete artifact. On load, checksums are verified; a
truncated or corrupt artifact is removed and rebuilt.

A temporary directory's name says who owns it (key, host, process id). A builder removes only
temporaries that are provably abandoned: those of its own key (it holds that key's lock, so
no one else is building it) and those whose owner process on this host is gone. A build of
another key in progress, however long it takes, is never touched.

Every other write-then-rename in the project goes through ``atomic_path`` / ``atomic_write``.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
import shutil
import socket
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
STORE_FORMAT = 1


def default_home() -> Path:
    """``EQI_HOME`` or ``~/.cache/eqi``."""
    return Path(os.environ.get("EQI_HOME", Path.home() / ".cache" / "eqi")).expanduser()


def use_numba_cache() -> None:
    """Keep numba's compiled kernels in the store (``NUMBA_CACHE_DIR``), so later processes start warm.

    numba reads the variable when it is imported, and ``import bm25s`` imports numba long before the
    first kernel is compiled; numba then fell back to ``__pycache__`` beside our sources, where the
    dashboard's warm-up child (which compiles into the store) never looked. So where numba is loaded
    already, its setting is set too: it is read when each ``cache=True`` function is decorated."""
    path = default_home() / "numba-cache"
    path.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("NUMBA_CACHE_DIR", str(path))
    if "numba" in sys.modules:
        from numba.core import config

        if not config.CACHE_DIR:
            config.CACHE_DIR = os.environ["NUMBA_CACHE_DIR"]


def params_key(kind: str, params: dict[str, Any]) -> str:
    """A short, stable content hash of an artifact's kind and parameters."""
    blob = json.dumps({"kind": kind, "params": params}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def content_digest(*parts: Any) -> str:
    """A short hash of values and bytes (cache keys for uploads and selections)."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else repr(p).encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def file_sha256(path: Path, chunk: int = 1 << 22) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


class CorruptArtifact(Exception):
    """An artifact on disk does not match its manifest."""


@dataclass(frozen=True)
class Artifact:
    """A complete, verified artifact directory and its manifest."""

    kind: str
    key: str
    path: Path
    manifest: dict[str, Any]

    @property
    def params(self) -> dict[str, Any]:
        return self.manifest["params"]

    def file(self, name: str) -> Path:
        return self.path / name


class ArtifactStore:
    """Builds, verifies and reuses artifacts under one root directory."""

    def __init__(self, root: str | Path | None = None):
        self.root = Path(root) if root is not None else default_home()
        self.root.mkdir(parents=True, exist_ok=True)

    def __repr__(self) -> str:
        return f"ArtifactStore({str(self.root)!r})"

    def path_for(self, kind: str, key: str) -> Path:
        return self.root / kind / key

    # -- reading -----------------------------------------------------------------------------
    def load(self, kind: str, params: dict[str, Any], verify: bool = True) -> Artifact | None:
        """The artifact for ``params`` if a complete, uncorrupted one exists, else None."""
        key = params_key(kind, params)
        path = self.path_for(kind, key)
        if not (path / MANIFEST).is_file():
            return None
        try:
            return self._read(kind, key, path, verify)
        except CorruptArtifact as exc:
            log.warning("artifact %s/%s is corrupt (%s); it will be rebuilt", kind, key, exc)
            return None

    def _read(self, kind: str, key: str, path: Path, verify: bool) -> Artifact:
        try:
            manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise CorruptArtifact(f"unreadable manifest: {exc}") from exc
        files = manifest.get("files")
        if not isinstance(files, dict):
            raise CorruptArtifact("manifest has no file list")
        for name, meta in files.items():
            f = path / name
            if not f.is_file():
                raise CorruptArtifact(f"missing file {name}")
            if f.stat().st_size != meta["size"]:
                raise CorruptArtifact(f"{name} has {f.stat().st_size} bytes, expected {meta['size']}")
            if verify and file_sha256(f) != meta["sha256"]:
                raise CorruptArtifact(f"{name} checksum mismatch")
        return Artifact(kind, key, path, manifest)

    # -- writing -----------------------------------------------------------------------------
    def get_or_build(
        self,
        kind: str,
        params: dict[str, Any],
        build: Callable[[Path], dict[str, Any] | None],
        sources: list[str] | None = None,
        verify: bool = True,
    ) -> Artifact:
        """Return the artifact for ``params``, building it with ``build(tmpdir)`` if needed.

        ``build`` writes its files into the temporary directory it is given and may return extra
        metadata for the manifest. Concurrent callers (threads, sessions, processes) build once:
        the others wait on the lock and then read the finished artifact.
        """
        found = self.load(kind, params, verify=verify)
        if found is not None:
            return found
        key = params_key(kind, params)
        final = self.path_for(kind, key)
        final.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(final) + ".lock"):
            if final.exists():
                try:
                    return self._read(kind, key, final, verify)
                except CorruptArtifact as exc:
                    log.warning("rebuilding corrupt artifact %s/%s (%s)", kind, key, exc)
                    shutil.rmtree(final, ignore_errors=True)
            sweep_abandoned(final.parent, key)
            tmp = final.parent / temporary_name(key)
            tmp.mkdir()
            try:
                started = time.time()
                extra = build(tmp) or {}
                files = {
                    str(p.relative_to(tmp)): {"size": p.stat().st_size, "sha256": file_sha256(p)}
                    for p in sorted(tmp.rglob("*"))
                    if p.is_file()
                }
                manifest = {
                    "format": STORE_FORMAT,
                    "kind": kind,
                    "key": key,
                    "params": params,
                    "sources": sources or [],
                    "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                    "build_seconds": round(time.time() - started, 3),
                    "files": files,
                    **({"meta": extra} if extra else {}),
                }
                atomic_write(tmp / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True, default=str))
                os.replace(tmp, final)
                self._journal(kind, key, manifest["build_seconds"])
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
        return self._read(kind, key, final, verify=False)

    def _journal(self, kind: str, key: str, seconds: float) -> None:
        """One line per completed build in ``builds.jsonl``: what was built, when, by which process."""
        line = json.dumps({"kind": kind, "key": key, "pid": os.getpid(), "seconds": seconds,
                           "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
        with open(self.root / "builds.jsonl", "a", encoding="utf-8") as fh:  # a single short append: atomic on POSIX
            fh.write(line + "\n")

    def builds(self) -> list[dict]:
        path = self.root / "builds.jsonl"
        return [json.loads(line_) for line_ in path.read_text(encoding="utf-8").splitlines() if line_.strip()] if path.exists() else []

    def work_dir(self, kind: str, params: dict[str, Any]) -> Path:
        """A scratch directory that survives a killed build (checkpoints, finished shards), so a
        rerun with the same parameters resumes; the builder removes it once the artifact exists."""
        path = self.root / kind / f"{params_key(kind, params)}.work"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def clear_work_dir(self, kind: str, params: dict[str, Any]) -> None:
        """Drop the scratch directory of a build whose artifact now exists."""
        shutil.rmtree(self.root / kind / f"{params_key(kind, params)}.work", ignore_errors=True)

    def remove(self, kind: str, params: dict[str, Any]) -> None:
        shutil.rmtree(self.path_for(kind, params_key(kind, params)), ignore_errors=True)

    def list(self, kind: str | None = None) -> list[Artifact]:
        """Every complete artifact (optionally of one kind), without checksum verification."""
        kinds = [kind] if kind else sorted(p.name for p in self.root.iterdir() if p.is_dir())
        out = []
        for k in kinds:
            for d in sorted((self.root / k).glob("*")) if (self.root / k).is_dir() else []:
                if d.is_dir() and (d / MANIFEST).is_file():
                    try:
                        out.append(self._read(k, d.name, d, verify=False))
                    except CorruptArtifact:
                        continue
        return out


# -- temporaries and their owners -------------------------------------------------------------------
_HOST = socket.gethostname().replace(".", "_") or "host"


def temporary_name(key: str) -> str:
    """``.<key>.<host>.<pid>.<random>.tmp``: a build directory that names its owner."""
    return f".{key}.{_HOST}.{os.getpid()}.{secrets.token_hex(4)}.tmp"


def _owner(name: str) -> tuple[str, str, int] | None:
    """(key, host, pid) of a temporary's name, or None for a name this store did not make."""
    parts = name[1:-len(".tmp")].split(".") if name.startswith(".") and name.endswith(".tmp") else []
    if len(parts) != 4 or not parts[2].isdigit():
        return None
    return parts[0], parts[1], int(parts[2])


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def sweep_abandoned(parent: Path, own_key: str) -> list[Path]:
    """Remove the temporaries in ``parent`` that no live builder owns; returns what was removed.

    Called under ``own_key``'s lock: a temporary of that key is a killed build of ours. Any other
    temporary is removed only when its owner is a process of this host that no longer exists
    (on a shared file system another host's builds are left alone)."""
    removed = []
    for path in parent.glob(".*.tmp"):
        owner = _owner(path.name)
        if owner is None:
            continue
        key, host, pid = owner
        if key == own_key or (host == _HOST and not process_alive(pid)):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


# -- atomic files ----------------------------------------------------------------------------------
@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it is renamed onto ``path`` (atomic on
    POSIX), on failure removed. Readers see the old file or the complete new one, never a part."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.part")
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename == str(tmp) and exc.errno is not None:  # name the file asked for
            raise OSError(exc.errno, exc.strerror, str(path)) from None
        raise


def atomic_write(path: str | Path, data: str | bytes) -> Path:
    """Write text or bytes to ``path`` atomically."""
    with atomic_path(path) as tmp:
        if isinstance(data, bytes):
            tmp.write_bytes(data)
        else:
            tmp.write_text(data, encoding="utf-8")
    return Path(path)


def atomic_copy(src: str | Path, dst: str | Path) -> Path:
    with atomic_path(dst) as tmp:
        shutil.copyfile(src, tmp)
    return Path(dst)
