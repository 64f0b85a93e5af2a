"""RELQ, Ranked Exposure List Quality (Li, Biega, Mitra et al., WWW 2022, eqs. 1-4).

    RELQ_{mu_dq, mu_qd}(psi_d) = sum_{q_i in psi_d} mu_dq(i) * mu_qd(rho(d, sigma_{q_i}))
                                 / sum_{q_j in psi*_d} mu_dq(j) * mu_qd(rho(d, sigma_{q_j}))

- ``psi_d``: the retrieved exposure list (queries, best first), cut at ``cutoff`` = n_d->q;
- ``rho(d, sigma_q)``: 0-based rank of d in q's top n_q->d results (infinity when absent, gain 0);
- ``mu_qd`` (searcher, document retrieval) turns that rank into a gain; ``mu_dq`` (EQI user)
  discounts by the 0-based position i in the exposure list;
- ``psi*_d``: the ideal list, every exposing query sorted by gain (rank ascending), cut at the
  same ``cutoff``, as nDCG@k normalises by the ideal top k. Brute force returns it: RELQ = 1.

User models (``UserModel``): ``RBP(gamma)``: gamma^i; ``NDCG``: 1 / log2(i + 2); ``EXH``: 1.
So RELQ_{RBP,RBP}(gamma_qd, gamma_dq) = eq. 3 and RELQ_{EXH,NDCG} = eq. 4 (EQI user inspects
the whole list; searcher gain 1 / log2(rho + 2)).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from eqi_core.exposure.exact import ExposureMap

from eqi_core.errors import DataError


@dataclass(frozen=True)
class UserModel:
    kind: str  # "RBP", "NDCG", "EXH"
    gamma: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in ("RBP", "NDCG", "EXH"):
            raise DataError(f"user model {self.kind!r}: expected RBP, NDCG or EXH")
        if self.kind == "RBP" and not (0 < self.gamma <= 1):
            raise DataError(f"patience gamma = {self.gamma}: expected a value in (0, 1]")

    def weights(self, ranks: np.ndarray) -> np.ndarray:
        """Weight of each 0-based rank (np.inf -> 0)."""
        ranks = np.asarray(ranks, dtype=float)
        finite = np.isfinite(ranks)
        out = np.zeros(ranks.shape)
        r = ranks[finite]
        if self.kind == "RBP":
            out[finite] = np.power(self.gamma, r)
        elif self.kind == "NDCG":
            out[finite] = 1.0 / np.log2(r + 2.0)
        else:
            out[finite] = 1.0
        return out

    def __str__(self) -> str:
        return f"RBP({self.gamma:g})" if self.kind == "RBP" else self.kind


def RBP(gamma: float) -> UserModel:
    return UserModel("RBP", gamma)


NDCG = UserModel("NDCG")
EXH = UserModel("EXH")


@dataclass(frozen=True)
class RelqSpec:
    """A RELQ variant: EQI-user model, searcher model and list cutoff; hashable, printable."""

    eqi_user: UserModel
    searcher: UserModel
    cutoff: int = 100

    def __str__(self) -> str:
        """The label used in tables and plots (no cutoff), e.g. ``RELQ_RBP,RBP(0.5,0.9)``: the
        searcher's patience first, as in the paper; a lone RBP model shows its own gamma."""
        u, s = self.eqi_user, self.searcher
        if u.kind == "RBP" and s.kind == "RBP":
            args = f"({s.gamma:g},{u.gamma:g})"
        elif u.kind == "RBP" or s.kind == "RBP":
            args = f"({(u if u.kind == 'RBP' else s).gamma:g})"
        else:
            args = ""
        return f"RELQ_{u.kind},{s.kind}{args}"

    @property
    def key(self) -> str:
        """The full spec with its cutoff, e.g. ``RELQ_RBP,RBP(0.5,0.9)@100``: CLI syntax and cache key."""
        return f"{self}@{self.cutoff}"

    @classmethod
    def parse(cls, text: str, cutoff: int = 100) -> RelqSpec:
        """``RELQ_RBP,RBP(0.5,0.9)@100``, ``RELQ_EXH,NDCG@50``, ``RELQ_RBP,NDCG(0.8)``: the inverse of
        ``key`` (and of ``str``, with ``cutoff`` when the text has none)."""
        import re

        m = re.fullmatch(r"\s*RELQ_(RBP|NDCG|EXH),(RBP|NDCG|EXH)(?:\(([^)]*)\))?(?:@(\d+))?\s*", text, flags=re.I)
        if not m:
            raise DataError(f"RELQ spec {text!r}: expected e.g. RELQ_RBP,RBP(0.5,0.9)@100 or RELQ_EXH,NDCG@100")
        u_kind, s_kind = m.group(1).upper(), m.group(2).upper()
        try:
            gammas = [float(g) for g in m.group(3).split(",")] if m.group(3) else []
        except ValueError:
            raise DataError(f"RELQ spec {text!r}: patience values must be numbers") from None
        wanted = (u_kind == "RBP") + (s_kind == "RBP")
        if len(gammas) != wanted:
            raise DataError(f"RELQ spec {text!r}: expected {wanted} patience value(s) for its RBP model(s)")
        if wanted == 2:
            g_s, g_u = gammas
        else:
            g_s = g_u = gammas[0] if gammas else 1.0
        user = RBP(g_u) if u_kind == "RBP" else UserModel(u_kind)
        searcher = RBP(g_s) if s_kind == "RBP" else UserModel(s_kind)
        n = int(m.group(4)) if m.group(4) else cutoff
        if n <= 0:
            raise DataError(f"RELQ spec {text!r}: the cutoff must be positive")
        return cls(user, searcher, n)


def relq_rbp(gamma_qd: float, gamma_dq: float, cutoff: int = 100) -> RelqSpec:
    """RELQ_{RBP,RBP} with searcher patience gamma_q->d and EQI-user patience gamma_d->q (paper's order)."""
    return RelqSpec(RBP(gamma_dq), RBP(gamma_qd), cutoff)


def relq_exh_ndcg(cutoff: int = 100) -> RelqSpec:
    return RelqSpec(EXH, NDCG, cutoff)


PATIENCE_GAMMAS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)  # the paper's Figure 5 grid, both axes
TABLE2_SPECS = (relq_rbp(0.5, 0.5), relq_rbp(0.5, 0.9), relq_rbp(1.0, 1.0), relq_exh_ndcg())


def relq(retrieved_doc_ranks: Sequence[float], exposing_doc_ranks: Iterable[float], spec: RelqSpec) -> float:
    """RELQ of one exposure list.

    ``retrieved_doc_ranks[i]``: rho(d, sigma_q) of the query at position i of psi_d (np.inf when
    that query does not expose d). ``exposing_doc_ranks``: rho(d, sigma_q) of every exposing query
    (the ideal list, any order). Returns NaN when d has no exposing query (nothing to find).
    """
    if spec.cutoff <= 0:
        raise DataError(f"cutoff n_d->q = {spec.cutoff}: expected a positive number of queries")
    got = np.asarray(list(retrieved_doc_ranks)[: spec.cutoff], dtype=float)
    ideal = np.sort(np.asarray(list(exposing_doc_ranks), dtype=float))[: spec.cutoff]
    if len(ideal) == 0:
        return math.nan
    positions = np.arange(max(len(got), len(ideal)), dtype=float)
    num = float((spec.eqi_user.weights(positions[: len(got)]) * spec.searcher.weights(got)).sum())
    den = float((spec.eqi_user.weights(positions[: len(ideal)]) * spec.searcher.weights(ideal)).sum())
    return num / den if den > 0 else math.nan


def relq_batch(retrieved: np.ndarray, ideal: np.ndarray, spec: RelqSpec) -> np.ndarray:
    """``relq`` for many passages at once.

    ``retrieved[p, i]``: rho(d_p, sigma_q) of the query at position i of passage p's list (np.inf
    for non-exposing queries and empty slots); ``ideal[p]``: the exposing ranks of passage p sorted
    ascending, padded with np.inf. Returns one RELQ per passage (NaN without exposing queries).
    """
    if spec.cutoff <= 0:
        raise DataError(f"cutoff n_d->q = {spec.cutoff}: expected a positive number of queries")
    got, best = retrieved[:, : spec.cutoff], ideal[:, : spec.cutoff]
    num = (spec.eqi_user.weights(np.arange(got.shape[1], dtype=float))[None, :] * spec.searcher.weights(got)).sum(axis=1)
    den = (spec.eqi_user.weights(np.arange(best.shape[1], dtype=float))[None, :] * spec.searcher.weights(best)).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


# -- scoring retrieved lists against the exact exposure map ----------------------------------------------
def exposure_rank_matrices(exposure: ExposureMap, docs: np.ndarray, retrieved: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(retrieved ranks, ideal ranks): rho(d, sigma_q) for each listed query (inf = not exposing or
    empty slot) and each passage's exposing ranks sorted ascending (inf-padded), as ``relq_batch`` wants."""
    width = retrieved.shape[1] if retrieved.ndim == 2 else 0
    got = np.full((len(docs), width), np.inf)
    ideal_rows = []
    for i, d in enumerate(docs):
        lookup = exposure.rank_lookup(int(d))
        row = retrieved[i]
        got[i] = [lookup.get(int(q), np.inf) if q >= 0 else np.inf for q in row]
        ideal_rows.append(np.sort(np.fromiter(lookup.values(), dtype=float, count=len(lookup))))
    depth = max([width] + [len(r) for r in ideal_rows]) if ideal_rows else width
    ideal = np.full((len(docs), depth), np.inf)
    for i, r in enumerate(ideal_rows):
        ideal[i, : len(r)] = r
    return got, ideal


def relq_per_passage(exposure: ExposureMap, docs: np.ndarray, retrieved: np.ndarray, spec: RelqSpec) -> np.ndarray:
    """RELQ of each passage's retrieved list (rows of query indices, -1 = empty slot)."""
    got, ideal = exposure_rank_matrices(exposure, docs, retrieved)
    return relq_batch(got, ideal, spec)
