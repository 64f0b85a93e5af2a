"""Collection spec strings -> loaders, discovery under data roots, and parsed-collection caching."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from eqi_core.collection import Collection
from eqi_core.errors import DataError
from eqi_core.loaders.beir import is_beir_dir, is_beir_zip, load_beir
from eqi_core.loaders.irds import load_irds
from eqi_core.loaders.msmarco import is_msmarco_dir, load_msmarco
from eqi_core.loaders.query_log import QUERY_LOG_FILE
from eqi_core.loaders.text_files import require_file
from eqi_core.loaders.wordnet import DEFAULT_SYNSETS, find_wordnet_dir, load_wordnet, source_signature
from eqi_core.store import ArtifactStore

KINDS = ("wordnet", "beir", "msmarco", "irds")
DEFAULT_SPEC = "wordnet"


LOG_SEPARATOR = "+log:"


@dataclass(frozen=True)
class CollectionSpec:
    kind: str
    location: str = ""
    split: str | None = None
    log: str | None = None  # a query log file given apart from the passages

    def __str__(self) -> str:
        if self.kind == "wordnet":
            base = "wordnet" if self.location in ("", str(DEFAULT_SYNSETS)) else f"wordnet:{self.location}"
        else:
            base = f"{self.kind}:{self.location}" + (f"#{self.split}" if self.split else "")
        return base + (f"{LOG_SEPARATOR}{self.log}" if self.log else "")


def parse_spec(spec: str) -> CollectionSpec:
    """``wordnet``, ``wordnet:full``, ``wordnet:5000``, ``beir:PATH#split``, ``msmarco:PATH``,
    ``irds:ID``, or a bare path (layout detected); any of them ``+log:FILE`` to search its
    passages with another query log (TSV, CSV, JSONL; eqi_core.loaders.query_log)."""
    spec = spec.strip()
    if LOG_SEPARATOR in spec:
        base, _, log = spec.rpartition(LOG_SEPARATOR)
        if not log.strip():
            raise DataError(f"collection {spec!r}: expected {LOG_SEPARATOR}<query log file> after the collection")
        from dataclasses import replace

        return replace(parse_spec(base), log=log.strip())
    spec = spec.strip()
    kind, sep, rest = spec.partition(":")
    if sep and kind in KINDS:
        location, _, split = rest.partition("#")
        if kind == "wordnet":
            if location not in ("", "full") and not location.isdigit():
                raise DataError(f"collection {spec!r}: expected wordnet, wordnet:full or wordnet:<number of synsets>")
            return CollectionSpec("wordnet", location or str(DEFAULT_SYNSETS))
        if not location:
            raise DataError(f"collection {spec!r}: expected {kind}:<{'id' if kind == 'irds' else 'path'}>")
        return CollectionSpec(kind, location, split or None)
    if spec == "wordnet":
        return CollectionSpec("wordnet", str(DEFAULT_SYNSETS))
    location, _, split = spec.partition("#")
    path = Path(location).expanduser()
    if path.is_dir() and is_beir_dir(path) or path.suffix == ".zip" and path.is_file():
        return CollectionSpec("beir", str(path), split or None)
    if path.is_dir() and is_msmarco_dir(path):
        return CollectionSpec("msmarco", str(path), split or None)
    if path.exists():
        raise DataError(f"{path}: not a BEIR folder/zip (corpus.jsonl, queries.jsonl) or an MS MARCO folder (collection.tsv)")
    raise DataError(
        f"collection {spec!r}: no such path, and not one of wordnet, wordnet:full, beir:PATH, msmarco:PATH, irds:ID"
    )


# raised when a loader reads the same files differently, so a parse cached by the version before is
# not served (2: an MS MARCO TSV's header line is a header, not a passage or query "pid"; 3: a query
# log's TSV line without a text is an error, not the query "nan", and a first line named "query_id..."
# is a header whatever its text column's name)
LOADER_VERSION = 3


def _signature(spec: CollectionSpec) -> dict:
    """What the parsed collection depends on: source file sizes and times."""
    if spec.log:
        from dataclasses import replace

        log = require_file(spec.log, QUERY_LOG_FILE)
        return {**_signature(replace(spec, log=None)), "log": [str(log), log.stat().st_size, int(log.stat().st_mtime)]}
    if spec.kind == "wordnet":
        d = find_wordnet_dir()
        return {"dir": str(d), "files": source_signature(d)}
    if spec.kind == "irds":
        return {"id": spec.location}
    p = Path(spec.location)
    files = [p] if p.is_file() else sorted(f for f in p.rglob("*") if f.is_file() and f.suffix in (".jsonl", ".tsv", ".txt", ".zip", ".gz"))
    return {"files": {str(f): [f.stat().st_size, int(f.stat().st_mtime)] for f in files}}


def _load_uncached(spec: CollectionSpec) -> Collection:
    if spec.log:
        from dataclasses import replace

        from eqi_core.loaders.query_log import read_query_log, with_query_log

        log = require_file(spec.log, QUERY_LOG_FILE)
        return with_query_log(_load_uncached(replace(spec, log=None)), read_query_log(log), log.name)
    if spec.kind == "wordnet":
        return load_wordnet(None if spec.location == "full" else int(spec.location))
    if spec.kind == "beir":
        return load_beir(spec.location, spec.split)
    if spec.kind == "msmarco":
        return load_msmarco(spec.location, spec.split)
    return load_irds(spec.location)


def load_collection(spec: str | CollectionSpec = DEFAULT_SPEC, store: ArtifactStore | None = None) -> Collection:
    """Load a collection by spec; with a store, the parsed tables are cached as Parquet."""
    spec = parse_spec(spec) if isinstance(spec, str) else spec
    if store is None:
        return _load_uncached(spec)
    params = {"spec": str(spec), "source": _signature(spec), "loader": LOADER_VERSION}

    def build(tmp: Path) -> dict:
        c = _load_uncached(spec)
        c.passages.to_parquet(tmp / "passages.parquet", index=False)
        c.queries.to_parquet(tmp / "queries.parquet", index=False)
        c.qrels.to_parquet(tmp / "qrels.parquet", index=False)
        (tmp / "info.json").write_text(json.dumps({"name": c.name, "source": c.source, "notes": c.notes}), encoding="utf-8")
        return {"fingerprint": c.fingerprint, "name": c.name}

    art = store.get_or_build("collection", params, build)
    info = json.loads(art.file("info.json").read_text(encoding="utf-8"))
    c = Collection(
        name=info["name"],
        passages=pd.read_parquet(art.file("passages.parquet")),
        queries=pd.read_parquet(art.file("queries.parquet")),
        qrels=pd.read_parquet(art.file("qrels.parquet")),
        source=info["source"],
    )
    c.notes = list(dict.fromkeys(info["notes"] + c.notes))
    return c


def shared_data() -> Path:
    """``../shared/data`` beside the checkout (or ``EQI_SHARED_DATA``): the IR collections and query logs
    that the natural decoder's corpus and the evaluations read when no ``--data`` is given."""
    env = os.environ.get("EQI_SHARED_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[3] / "shared" / "data"


def data_roots() -> list[Path]:
    """Folders the dashboard may read collections from: ``EQI_DATA_ROOTS`` (os.pathsep-separated)."""
    raw = os.environ.get("EQI_DATA_ROOTS", "")
    return [Path(p).expanduser().resolve() for p in raw.split(os.pathsep) if p.strip()]


def check_within_roots(spec: str, roots: list[Path] | None = None) -> str:
    """A spec from outside (a link, a form) may only name files under the data roots: resolved
    paths (symlinks followed, ``..`` collapsed) must lie inside one of them. Returns the spec."""
    parsed = parse_spec(spec)
    paths = [] if parsed.kind in ("wordnet", "irds") else [parsed.location]
    paths += [parsed.log] if parsed.log else []
    for location in paths:
        check_path_within_roots(location, roots)
    return spec


def check_path_within_roots(location: str | Path, roots: list[Path] | None = None) -> Path:
    """A file named from outside (a link) must resolve inside a data root or the upload folder."""
    target = Path(location).expanduser().resolve()
    allowed = (roots if roots is not None else data_roots()) + [uploads_root()]
    if not any(target == r or r in target.parents for r in allowed):
        raise DataError(f"{location}: outside the configured data roots (EQI_DATA_ROOTS); refusing to read it")
    return target


def uploads_root() -> Path:
    """Where files uploaded in the dashboard are kept: the artifact store's ``upload`` kind."""
    from eqi_core.store import default_home

    return (default_home() / "upload").resolve()


def discover_collections(roots: list[Path] | None = None) -> dict[str, str]:
    """label -> spec: the WordNet options plus BEIR/MS MARCO folders and zips one level under each root."""
    found = {
        f"WordNet · {DEFAULT_SYNSETS // 1000}k synsets (default)": "wordnet",
        "WordNet · full (118k synsets)": "wordnet:full",
    }
    for root in roots if roots is not None else data_roots():
        if not root.is_dir():
            continue
        for child in sorted(root.iterdir()):
            if child.is_dir() and is_beir_dir(child):
                found[f"{child.name} (BEIR)"] = f"beir:{child}"
            elif child.is_dir() and is_msmarco_dir(child):
                found[f"{child.name} (MS MARCO)"] = f"msmarco:{child}"
            elif is_beir_zip(child):
                found[f"{child.stem} (BEIR zip)"] = f"beir:{child}"
    return found


def web_log_demo(roots: list[Path] | None = None) -> str | None:
    """The spec of the realistic second demo, when its files are under the data roots: the TREC DL 2019
    passages searched by the MS MARCO passage queries (real Bing queries), else None."""
    for root in roots if roots is not None else data_roots():
        dl19, log = root / "trec-dl19-passage", root / "query-logs" / "msmarco-passage-dev-subset.tsv"
        if is_beir_dir(dl19) and log.is_file():
            return f"beir:{dl19}{LOG_SEPARATOR}{log}"
    return None


def web_log_for(source: str) -> str | None:
    """The web-log demo's spec (``web_log_demo``) when ``source`` (a collection's spec or source) is its
    passages searched by their own few test queries, else None: the real log at hand for them."""
    demo = web_log_demo()
    if demo is None or LOG_SEPARATOR in source:
        return None
    return demo if source.split("#")[0] == demo.split(LOG_SEPARATOR)[0] else None
