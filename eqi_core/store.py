"""Artifact store: everything expensive is built once, keyed by what it was made from.

An artifact is a directory ``<EQI_HOME>/<kind>/<key>/`` holding its files plus ``manifest.json``
(the parameters that made it, the artifacts it was built from, and a SHA-256 of every file).
The key is a content hash of ``kind`` + parameters, so the same inputs reuse the same artifact.

Writes are atomic: a builder fills a private temporary directory beside the target, the
manifest is written last, and the directory is renamed into place under a file lock, so a
crash leaves either nothing or a complete artifact. On load, checksums are verified; a
truncated or corrupt artifact is removed and rebuilt.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from filelock import FileLock

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
STORE_FORMAT = 1


def default_home() -> Path:
    """``EQI_HOME`` or ``~/.cache/eqi``."""
    return Path(os.environ.get("EQI_HOME", Path.home() / ".cache" / "eqi")).expanduser()


def params_key(kind: str, params: dict[str, Any]) -> str:
    """A short, stable content hash of an artifact's kind and parameters."""
    blob = json.dumps({"kind": kind, "params": params}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


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
            manifest = json.loads((path / MANIFEST).read_text())
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
            self._sweep_temporaries(final.parent)
            tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", suffix=".tmp", dir=final.parent))
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
                _write_json_atomic(tmp / MANIFEST, manifest)
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
        with open(self.root / "builds.jsonl", "a") as fh:  # a single short append: atomic on POSIX
            fh.write(line + "\n")

    def builds(self) -> list[dict]:
        path = self.root / "builds.jsonl"
        return [json.loads(l) for l in path.read_text().splitlines() if l.strip()] if path.exists() else []

    @staticmethod
    def _sweep_temporaries(parent: Path) -> None:
        """Remove temporary build dirs left by a killed builder (we hold the lock)."""
        for stale in parent.glob(".*.tmp"):
            if time.time() - stale.stat().st_mtime > 5:
                shutil.rmtree(stale, ignore_errors=True)

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


def _write_json_atomic(path: Path, obj: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".part")
    tmp.write_text(json.dumps(obj, indent=1, sort_keys=True, default=str))
    os.replace(tmp, path)
