"""Collection: passages, queries and graded judgments with stable ids and a content fingerprint."""
from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

from eqi_core.errors import DataError

log = logging.getLogger(__name__)

PASSAGE_COLUMNS = ["doc_id", "title", "text"]
QUERY_COLUMNS = ["query_id", "text"]
QRELS_COLUMNS = ["query_id", "doc_id", "relevance"]


def titled(title: str, text: str) -> str:
    """A passage as rankers index it and pages show it: "title. text", or whichever of the two it has
    (a title-only passage is "title.", with nothing trailing)."""
    if not title:
        return text
    return f"{title}. {text}" if text else f"{title}."


def percent(part: float, whole: float) -> str:
    """``part`` of ``whole`` as a data note writes it: whole percents, but a share that would round to
    0% or 100% without being none or all keeps its digits ("0.077%" for 4 of SciFact's 5,183 passages,
    "99.981%" for all but 1 of 5,183)."""
    share = part / whole if whole else 0.0
    if 0 < share < 0.005:
        return f"{100 * share:.2g}%"
    if 0.995 <= share < 1:
        return f"{100 - float(f'{100 * (1 - share):.2g}'):g}%"
    return f"{share:.0%}"


MIS_DECODED_SAMPLE = 20_000  # passages looked at for the note when a collection has over ten times as many


def as_mis_decoded(text: str) -> str | None:
    """``text`` as MS MARCO's files hold it: its UTF-8 bytes read as Windows-1252 (undefined bytes as
    Latin-1, ftfy's "sloppy" codec), so that what people copy from the repaired screen is found in
    the file's text; None when that changes nothing (ASCII)."""
    if text.isascii():
        return None
    import ftfy.bad_codecs  # noqa: F401  (registers sloppy-windows-1252)

    return text.encode("utf-8").decode("sloppy-windows-1252")


def readable(text):
    """``text`` with mis-decoded characters repaired, for people to read (``ftfy.fix_encoding``).
    MS MARCO's passages hold UTF-8 that was read as Windows-1252 ("thatâ€™s", "81 Â°F": 3,393 of
    TREC DL 2019's 14,581); rankers keep reading the file's text as written, which the published
    runs were made on, so only what is shown is repaired. Anything but a string passes through."""
    if not isinstance(text, str) or text.isascii():
        return text
    import ftfy

    return ftfy.fix_encoding(text)


def _frame_digest(df: pd.DataFrame) -> bytes:
    hashed = pd.util.hash_pandas_object(df.reset_index(drop=True), index=False)
    return hashlib.sha256(np.ascontiguousarray(hashed.to_numpy()).tobytes()).digest()


@dataclass
class Collection:
    """A test collection in memory.

    ``passages``: doc_id, title, text. ``queries``: query_id, text. ``qrels``: query_id, doc_id,
    relevance (int, higher = more relevant). Ids are strings, unique within their table.
    Qrels may name passages that are not in ``passages`` (judged but without text, as in TREC DL
    subsets): they are kept, because they still count in an ideal ranking, and reported in
    ``notes``.
    """

    name: str
    passages: pd.DataFrame
    queries: pd.DataFrame
    qrels: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=QRELS_COLUMNS))
    source: str = ""
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.passages = _normalise(self.passages, PASSAGE_COLUMNS, "passages", self.source)
        weights = "count" in self.queries.columns  # how often each query was issued (a log's frequencies)
        counts = self.queries["count"].astype("int64").to_numpy() if weights else None
        self.queries = _normalise(self.queries, QUERY_COLUMNS, "queries", self.source)
        if weights:
            self.queries["count"] = counts
        qrels = self.qrels if len(self.qrels) else pd.DataFrame(columns=QRELS_COLUMNS)
        qrels = qrels[QRELS_COLUMNS].copy()
        qrels["query_id"] = qrels["query_id"].astype(str)
        qrels["doc_id"] = qrels["doc_id"].astype(str)
        qrels["relevance"] = qrels["relevance"].astype("int64")
        dup = qrels.duplicated(["query_id", "doc_id"], keep="last")
        if dup.any():
            self.notes.append(f"{int(dup.sum())} repeated qrels pairs: the last grade was kept")
            qrels = qrels[~dup]
        self.qrels = qrels.reset_index(drop=True)
        self._check_empty_passages()
        self._check_references()

    def _check_empty_passages(self) -> None:
        """A passage without title or text is kept (judgments may name it) but can never be found by
        its words: an auditor asking who is shown it should know why nobody is, or why a dense ranker
        shows it to everyone alike."""
        def blank(column: str) -> pd.Series:  # isspace stops at the first letter: 0.04 s for 2M passages
            values = self.passages[column].fillna("")
            return (values == "") | values.str.isspace()

        blank = blank("title") & blank("text")
        if blank.any():
            n, ids = int(blank.sum()), ", ".join(map(repr, self.passages.loc[blank, "doc_id"].head(3)))
            self.notes.append(f"{n:,} of {len(self.passages):,} passages {'has' if n == 1 else 'have'} no text "
                              f"({'e.g. ' if n > 3 else ''}{ids}): kept, but no ranker can match "
                              f"{'it' if n == 1 else 'them'} by {'its' if n == 1 else 'their'} words")

    def _check_references(self) -> None:
        unknown_docs = ~_among(self.qrels["doc_id"], self.passages["doc_id"])
        unknown_queries = ~_among(self.qrels["query_id"], self.queries["query_id"])
        if unknown_docs.any():
            self.notes.append(
                f"{int(unknown_docs.sum()):,} of {len(self.qrels):,} judgments name passages that are not "
                "in the corpus (kept: they count in ideal rankings, never retrieved)"
            )
        if unknown_queries.any():
            self.notes.append(
                f"{int(unknown_queries.sum())} judgments name queries that are not in the query set"
            )
        for note in self.notes:
            log.info("%s: %s", self.name, note)

    @property
    def query_weights(self) -> np.ndarray:
        """How often each logged query was issued (all 1 when the log has no counts)."""
        if "count" in self.queries.columns:
            return self.queries["count"].to_numpy(dtype=np.float64)
        return np.ones(len(self.queries))

    # -- identity ----------------------------------------------------------------------------
    @cached_property
    def fingerprint(self) -> str:
        """SHA-256 of the content (ids, texts, judgments): same content, same fingerprint."""
        h = hashlib.sha256()
        for df in (self.passages, self.queries, self.qrels):
            h.update(_frame_digest(df))
        return h.hexdigest()[:16]

    # -- look-ups ----------------------------------------------------------------------------
    @cached_property
    def doc_index(self) -> pd.Index:
        return pd.Index(self.passages["doc_id"])

    @cached_property
    def query_text(self) -> dict[str, str]:
        return dict(zip(self.queries["query_id"], self.queries["text"]))

    @cached_property
    def _query_id_by_text(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for qid, text in zip(self.queries["query_id"], self.queries["text"]):
            out.setdefault(" ".join(text.lower().split()), qid)
        return out

    def find_query(self, text: str) -> str | None:
        """The id of a logged query with this text (case and spacing ignored), if any."""
        return self._query_id_by_text.get(" ".join(text.lower().split()))

    def first_view_query(self, curated: str = "") -> str:
        """The query a page shows before the user types one: ``curated`` where the log holds it; else
        the first query with judgments (so the first view has nDCG@10 and a gold passage to show);
        else the first query; else ""."""
        if curated and self.find_query(curated):
            return curated
        judged = self.queries[self.queries["query_id"].isin(self.judgments)]
        return str((judged if len(judged) else self.queries)["text"].iloc[0]) if len(self.queries) else ""

    @cached_property
    def judgments(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for qid, did, rel in self.qrels.itertuples(index=False):
            out.setdefault(qid, {})[did] = int(rel)
        return out

    def passage_texts(self) -> list[str]:
        """Texts as rankers index them: title and body joined. Made once per collection and shared, so
        callers only read it: a page's every result table, RM3 and the latent map ask for it, and
        making it took 1.6 s a call on 500,000 passages."""
        return self._passage_texts

    @cached_property
    def _passage_texts(self) -> list[str]:
        titles = self.passages["title"].fillna("")
        texts = self.passages["text"].fillna("")
        return [titled(t, x) for t, x in zip(titles, texts)]

    def passage_text(self, doc_id: str) -> str | None:
        """One passage's text as rankers index it (title and body joined); None for an id that is
        not among the passages (a run or qrels may name passages the collection lacks)."""
        at = self.doc_index.get_indexer([doc_id])[0]
        if at < 0:
            return None
        title, text = self.passages["title"].iat[at], self.passages["text"].iat[at]
        title, text = ("" if pd.isna(title) else title), ("" if pd.isna(text) else text)
        return titled(title, text)

    @cached_property
    def _text_hashes(self) -> np.ndarray:
        """Each passage text's hash (8 bytes a passage, where a dict of the texts would hold them twice)."""
        return np.fromiter((hash(t) for t in self.passage_texts()), dtype=np.int64, count=len(self.passages))

    def same_text(self, text: str, but: str | None = None) -> list[str]:
        """Ids of the passages whose text, as rankers index it, is exactly ``text`` (``but`` aside):
        every ranker scores them alike (17 of WordNet's 20,001 glosses share theirs). Empty texts are
        no one's twins."""
        if not text.strip():
            return []
        at = np.flatnonzero(self._text_hashes == hash(text))
        texts = self.passage_texts()
        return [d for d, i in zip(self.passages["doc_id"].iloc[at], at) if d != but and texts[i] == text]

    def display_text(self, doc_id: str) -> str | None:
        """``passage_text`` repaired for reading (``readable``); None for an id not among the passages."""
        return readable(self.passage_text(doc_id))

    def find_passages(self, pattern: str = "", limit: int = 500) -> pd.DataFrame:
        """Passages whose id or text contains ``pattern`` (case-insensitive, literal), shown as people
        read them (``readable``), with the number of judgments naming each. A phrase copied from the
        repaired screen is also looked for as the file holds it (``as_mis_decoded``), so no pass
        over the whole collection is needed (a repair costs ~0.1 ms a non-ASCII passage)."""
        counts = self.qrels.groupby("doc_id").size()
        found = _filter(self.passages, ["doc_id", "title", "text"], pattern, limit, also=as_mis_decoded(pattern.strip()))
        return found.assign(title=found["title"].map(readable), text=found["text"].map(readable),
                            judgments=found["doc_id"].map(counts).fillna(0).astype(int))

    @cached_property
    def mis_decoded(self) -> tuple[int, int]:
        """(passages holding mis-decoded characters that ``readable`` repairs, passages looked at):
        every passage, or a seeded sample of ``MIS_DECODED_SAMPLE`` when there are over ten times as
        many (MS MARCO's 8.8M passages would take minutes)."""
        frame = self.passages
        if len(frame) > 10 * MIS_DECODED_SAMPLE:
            frame = frame.sample(MIS_DECODED_SAMPLE, random_state=0)
        changed = sum(readable(t) != t or readable(x) != x for t, x in zip(frame["title"].fillna(""), frame["text"].fillna("")))
        return int(changed), len(frame)

    def mis_decoded_note(self) -> str | None:
        """One line for the Collection page and ``eqi collections inspect``; None when no passage needs it."""
        n, looked = self.mis_decoded
        if not n:
            return None
        what = "(UTF-8 read as Windows-1252: \"â€™\" for \"’\"); they are shown repaired, and rankers read them as written"
        if looked == len(self.passages):
            return f"{n:,} of {looked:,} passages ({percent(n, looked)}) hold mis-decoded characters {what}"
        return (f"about {percent(n, looked)} of the passages (in a seeded sample of {looked:,} of {len(self.passages):,}) "
                f"hold mis-decoded characters {what}")

    def find_queries(self, pattern: str = "", limit: int = 500) -> pd.DataFrame:
        """Queries whose id or text contains ``pattern``, with their number of judgments."""
        counts = self.qrels.groupby("query_id").size()
        found = _filter(self.queries, ["query_id", "text"], pattern, limit)
        return found.assign(judgments=found["query_id"].map(counts).fillna(0).astype(int))

    def stats(self) -> dict[str, int | float | str]:
        judged_queries = self.qrels["query_id"].nunique()
        return {
            "name": self.name,
            "fingerprint": self.fingerprint,
            "passages": len(self.passages),
            "queries": len(self.queries),
            "judgments": len(self.qrels),
            "judged_queries": int(judged_queries),
            "mean_judgments_per_query": round(len(self.qrels) / judged_queries, 2) if judged_queries else 0.0,
            "mean_passage_words": round(float(self.passages["text"].str.split().str.len().mean() or 0), 1),
            "mean_query_words": round(float(self.queries["text"].str.split().str.len().mean() or 0), 2),
        }


def _among(values: pd.Series, ids: pd.Series) -> np.ndarray:
    """Whether each of ``values`` is one of ``ids``, by pyarrow's hash lookup: pandas' ``isin`` on
    Arrow-backed strings took 0.6 s a column for WordNet's 206,941 judgments (every load of the
    collection, each CLI command), this 0.02 s."""
    import pyarrow as pa
    import pyarrow.compute as pc

    return np.asarray(pc.is_in(pa.array(values, type=pa.string()), value_set=pa.array(ids, type=pa.string())), dtype=bool)


def _filter(df: pd.DataFrame, columns: list[str], pattern: str, limit: int, also: str | None = None) -> pd.DataFrame:
    """Rows where a column contains ``pattern`` (or ``also``, another form of it), at most ``limit``."""
    if not pattern.strip():
        return df.head(limit)
    mask = pd.Series(False, index=df.index)
    for col in columns:
        for form in (pattern.strip(), also):
            if form:
                mask |= df[col].str.contains(form, case=False, regex=False, na=False)
    return df[mask].head(limit)


def _normalise(df: pd.DataFrame, columns: list[str], what: str, source: str) -> pd.DataFrame:
    df = df.copy()
    for col in columns:
        if col not in df.columns:
            if col == "title":
                df[col] = ""
            else:
                raise DataError(f"{source or 'collection'}: {what} have no '{col}' column")
    df = df[columns]
    id_col = columns[0]
    missing = df[id_col].isna().to_numpy()
    if missing.any():  # a frame built in a notebook: its null id was kept as "None" or "nan"
        raise DataError(f"{source or 'collection'}: {what} have a missing id (row {int(missing.argmax()) + 1} of the frame)")
    df[id_col] = df[id_col].astype(str)
    for col in columns[1:]:
        df[col] = df[col].fillna("").astype(str)
    dup = df[id_col].duplicated()
    if dup.any():
        first = df.loc[dup, id_col].iloc[0]
        raise DataError(
            f"{source or 'collection'}: {what} have {int(dup.sum())} duplicate ids "
            f"(first: {first!r}); ids must be unique"
        )
    return df.reset_index(drop=True)
