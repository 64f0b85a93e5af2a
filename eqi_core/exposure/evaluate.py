"""Putting EQI together for a collection and a ranker: the exact map, the embedding space, the
methods (brute force, BM25-reverse, BM25-tuned, dense-reverse, Append, Residual), held-out test
passages, RELQ tables (paper Table 2), the training-size grid (Table 3) and the expanding-log
simulation (Figure 2)."""
from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pandas as pd
from scipy import stats

from eqi_core.errors import DataError
from eqi_core.exposure.exact import ExposureMap
from eqi_core.exposure.learned import LearnedEQI, NothingExposedToTrainOn, TrainingConfig, train_or_load
from eqi_core.exposure.relq import (
    PATIENCE_GAMMAS,
    TABLE2_SPECS,
    exposure_rank_matrices,
    relq_batch,
    relq_per_passage,
    relq_rbp,
)
from eqi_core.exposure.setup import (  # noqa: F401
    ExposureSetup,
    digest,
    exposure_ready,
    prepare_exposure,
)
from eqi_core.progress import ProgressFn
from eqi_core.rankers.dense import exact_topk


def evaluate_lists(exposure: ExposureMap, docs: np.ndarray, lists: dict[str, np.ndarray],
                   specs=TABLE2_SPECS) -> pd.DataFrame:
    """Per-passage RELQ for every method and spec: columns doc, method, <spec>..."""
    frames = []
    for name, idx in lists.items():
        cols = {str(s): relq_per_passage(exposure, docs, idx, s) for s in specs}
        frames.append(pd.DataFrame({"doc": exposure.doc_ids[docs], "method": name, **cols}))
    return pd.concat(frames, ignore_index=True)


def table2(per_passage: pd.DataFrame, order: list[str] | None = None) -> pd.DataFrame:
    """Mean RELQ per method (rows) and spec (columns), the paper's Table 2 layout."""
    t = per_passage.drop(columns=["doc"]).groupby("method", sort=False).mean()
    return t.reindex(order) if order else t


UNDEFINED_TEST_NOTE = ("—: no t-test where a method's RELQ equals the reference's on every held-out passage, or "
                       "there is one passage only")


def paired_ttests(per_passage: pd.DataFrame, spec: str, reference: str) -> pd.DataFrame:
    """One-tailed paired t-test of each method against ``reference`` on the per-passage RELQ; t and p
    are NaN where the test is undefined (one held-out passage, or the same RELQ on every one),
    without scipy's division warnings."""
    wide = per_passage.pivot(index="doc", columns="method", values=spec)
    rows = []
    for m in wide.columns:
        if m == reference:
            continue
        with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            res = stats.ttest_rel(wide[m], wide[reference], alternative="greater")
        rows.append({"method": m, "vs": reference, "mean_diff": float((wide[m] - wide[reference]).mean()),
                     "t": float(res.statistic), "p_one_tailed": float(res.pvalue)})
    return pd.DataFrame(rows)


def ttests_at(exposure: ExposureMap, docs: np.ndarray, lists: dict[str, np.ndarray], spec, reference: str) -> pd.DataFrame:
    """Table 2's one-tailed paired t-tests against ``reference`` at another RELQ ``spec`` (e.g. the
    patiences of a heatmap cell an auditor clicked), each method's mean beside them: whether a method's
    lead holds where the searcher or the auditor is more or less patient."""
    per_passage = evaluate_lists(exposure, docs, lists, [spec])
    means = per_passage.groupby("method", sort=False)[str(spec)].mean().rename("mean RELQ")
    tests = paired_ttests(per_passage, str(spec), reference)
    return means.to_frame().join(tests.set_index("method")).reset_index()


def run_table2(setup: ExposureSetup, n_test: int = 1000, n_dq: int = 100, config: TrainingConfig | None = None,
               progress: ProgressFn | None = None, seed: int = 0) -> dict:
    """Brute force, BM25-reverse, BM25-tuned, dense-reverse, Append and Residual on held-out passages."""
    if n_dq <= 0:
        raise DataError(f"n_d->q = {n_dq}: expected a positive number of queries")
    config = config or TrainingConfig(n_dq=n_dq, seed=seed)
    test = setup.test_passages(n_test, seed)
    setup.encode_passages(progress)  # every passage: the heads train on them (a page's setup may not have them yet)
    rng = np.random.default_rng(seed + 1)
    pool = np.setdiff1d(np.flatnonzero(setup.exposure.counts() > 0), test)
    tune_docs = rng.choice(pool, size=min(300, len(pool)), replace=False)
    texts = [setup.passage_text(int(d)) for d in test]
    lists = {"Brute force": setup.brute_force(test, n_dq)}
    lists["BM25-reverse"] = setup.bm25_reverse().retrieve_texts(texts, n_dq)[0]
    tuned, tuning = setup.bm25_tuned(tune_docs, n_dq)
    lists["BM25-tuned"] = tuned.retrieve_texts(texts, n_dq)[0]
    lists[setup.dense_reverse().name] = setup.dense_reverse().retrieve(setup.doc_emb[test], n_dq)[0]
    infos = {}
    for arch in ("append", "residual"):
        model, info = setup.learned(replace(config, arch=arch), test, progress)
        lists[model.name] = model.retrieve(setup.doc_emb[test], n_dq)[0]
        infos[arch] = info
    per_passage = evaluate_lists(setup.exposure, test, lists, [replace(s, cutoff=n_dq) for s in TABLE2_SPECS])
    main_spec = str(relq_rbp(0.5, 0.9, n_dq))
    return {
        "table": table2(per_passage, list(lists)),
        "per_passage": per_passage,
        "ttests": paired_ttests(per_passage, main_spec, setup.dense_reverse().name),
        "bm25_tuning": tuning,
        "training": infos,
        "test_passages": int(len(test)),
        "lists": lists,
        "test_docs": test,
    }


def patience_grid(exposure: ExposureMap, docs: np.ndarray, retrieved: np.ndarray, n_dq: int = 100,
                  gammas=PATIENCE_GAMMAS) -> pd.DataFrame:
    """Mean RELQ_{RBP,RBP} over a grid: rows gamma_q->d (searcher), columns gamma_d->q (EQI user)."""
    got, ideal = exposure_rank_matrices(exposure, docs, retrieved)
    out = pd.DataFrame(index=pd.Index(gammas, name="gamma_qd"), columns=pd.Index(gammas, name="gamma_dq"), dtype=float)
    for g_qd in gammas:
        for g_dq in gammas:
            out.loc[g_qd, g_dq] = float(np.nanmean(relq_batch(got, ideal, relq_rbp(g_qd, g_dq, n_dq))))
    return out


TABLE3_PASSAGE_SIZES = (1000, 2500, 5000)  # training passages (rows of paper Table 3)
TABLE3_LOG_SHARES = (4, 2, 1)  # training queries: a quarter, half and all of the log (columns)
FIGURE2_TRAIN_FRACTIONS = (0.25, 0.5, 0.75)  # share of the log a head is trained on (paper Figure 2)
FIGURE2_LOG_FRACTIONS = (0.25, 0.5, 0.75, 1.0)  # log sizes it is evaluated on, without retraining


def training_size_grid(setup: ExposureSetup, test: np.ndarray, query_sizes: list[int] | None = None,
                       passage_sizes: list[int] | None = None, base: TrainingConfig | None = None, n_dq: int = 100,
                       progress: ProgressFn | None = None) -> pd.DataFrame:
    """Paper Table 3: Residual RELQ_{RBP,RBP}(0.5, 0.9) by training queries (columns) x passages (rows);
    by default the paper's layout scaled to the log (TABLE3_*). A cell whose training queries expose no
    passage is NaN."""
    n_q = len(setup.exposure.query_ids)
    query_sizes = list(query_sizes or [n_q // s for s in TABLE3_LOG_SHARES])
    passage_sizes = list(passage_sizes or TABLE3_PASSAGE_SIZES)
    base = base or TrainingConfig(n_dq=n_dq)
    spec = relq_rbp(0.5, 0.9, n_dq)
    setup.encode_passages(progress)
    out = pd.DataFrame(index=pd.Index(passage_sizes, name="train passages"),
                       columns=pd.Index(query_sizes, name="train queries"), dtype=float)
    for p in passage_sizes:
        for q in query_sizes:
            try:
                model, _ = setup.learned(replace(base, arch="residual", n_train_queries=q, n_train_passages=p), test, progress)
            except NothingExposedToTrainOn:
                continue  # so few queries expose no passage (a small log's smallest share): the cell stays empty
            idx, _ = model.retrieve(setup.doc_emb[test], n_dq)
            out.loc[p, q] = float(np.nanmean(relq_per_passage(setup.exposure, test, idx, spec)))
    return out


def expanding_log(setup: ExposureSetup, test: np.ndarray, train_fractions: list[float] = FIGURE2_TRAIN_FRACTIONS,
                  eval_fractions: list[float] = FIGURE2_LOG_FRACTIONS, base: TrainingConfig | None = None,
                  n_dq: int = 100, seed: int = 0, progress: ProgressFn | None = None) -> pd.DataFrame:
    """Paper Figure 2: a Residual model trained on the first fraction f of a shuffled log, evaluated
    (without retraining) as the log grows to each larger fraction; dense-reverse alongside."""
    base = base or TrainingConfig(n_dq=n_dq)
    n_q = len(setup.exposure.query_ids)
    order = np.random.default_rng(seed + 11).permutation(n_q)
    spec = relq_rbp(0.5, 0.9, n_dq)
    setup.encode_passages(progress)

    def log_at(f_eval: float) -> tuple[np.ndarray, ExposureMap, np.ndarray]:
        """The first f_eval of the shuffled log, the exposure it gives, and which test passages it exposes."""
        log = np.sort(order[: max(1, int(round(f_eval * n_q)))])
        mask = np.zeros(n_q, dtype=bool)
        mask[log] = True
        truth = setup.exposure.restricted_to(mask)
        return log, truth, truth.counts()[test] > 0

    rows = []
    for f_train in train_fractions:
        n_train = max(1, int(round(f_train * n_q)))
        try:
            model, _ = _learned_on_prefix(setup, order[:n_train], base, test, progress)
        except NothingExposedToTrainOn:
            continue  # that share of a small log exposes no training passage: no line for it
        transformed = model.model.transform(setup.doc_emb[test], "passage")
        for f_eval in [f for f in eval_fractions if f >= f_train]:
            log, truth, ok = log_at(f_eval)
            _, idx = exact_topk(transformed[ok], model.query_space[log], n_dq)
            rows.append({"train_fraction": f_train, "log_fraction": f_eval, "log_size": int(len(log)),
                         "method": "Residual", "relq": float(np.nanmean(relq_per_passage(truth, test[ok], log[idx], spec)))})
    for f_eval in [f for f in eval_fractions if f >= train_fractions[0]]:  # the baseline, trained on nothing
        log, truth, ok = log_at(f_eval)
        _, idx = exact_topk(setup.doc_emb[test][ok], setup.query_emb[log], n_dq)
        rows.append({"train_fraction": np.nan, "log_fraction": f_eval, "log_size": int(len(log)),
                     "method": "dense-reverse", "relq": float(np.nanmean(relq_per_passage(truth, test[ok], log[idx], spec)))})
    return pd.DataFrame(rows, columns=["train_fraction", "log_fraction", "log_size", "method", "relq"])


def untrained_shares(growing: pd.DataFrame, train_fractions: list[float] = FIGURE2_TRAIN_FRACTIONS) -> str:
    """What ``expanding_log`` could not train on, said in one line ("" when it trained on every share)."""
    missing = [f for f in train_fractions if f not in set(growing["train_fraction"].dropna())]
    if not missing:
        return ""
    return (f"No Residual line for {', '.join(f'{f:.0%}' for f in missing)} of the log: so few queries expose no "
            "passage outside the held-out ones.")


def _learned_on_prefix(setup: ExposureSetup, train_queries: np.ndarray, base: TrainingConfig, test: np.ndarray,
                       progress: ProgressFn | None) -> tuple[LearnedEQI, dict]:
    """A Residual model trained when the log held only ``train_queries`` (Q_train = all of them)."""
    pool = np.sort(np.asarray(train_queries, dtype=np.int64))
    excl = np.asarray(test, dtype=np.int64)
    params = {**setup.params(), "excluded": digest(excl), "query_pool": digest(pool)}
    config = replace(base, arch="residual", n_train_queries=None)
    model, info = train_or_load(setup.store, params, setup.exposure, setup.query_emb, setup.doc_emb, config, excl,
                                progress, query_pool=pool)
    return LearnedEQI.from_model(model, setup.query_emb, "Residual"), info


def table2_params(setup: ExposureSetup, n_test: int, n_dq: int, config: TrainingConfig, seed: int) -> dict:
    from dataclasses import asdict

    from eqi_core.exposure.learned import HEAD_VERSION
    from eqi_core.rankers.bm25 import BM25_SELECTION

    return {**setup.params(), "n_test": n_test, "n_dq": n_dq, "seed": seed, "config": asdict(config), "version": HEAD_VERSION,
            "bm25_selection": BM25_SELECTION}  # BM25-reverse is one of the methods


def table2_available(setup: ExposureSetup, n_test: int = 1000, n_dq: int = 100, config: TrainingConfig | None = None,
                     seed: int = 0) -> bool:
    config = config or TrainingConfig(n_dq=n_dq, seed=seed)
    return setup.store.load("exposure-eval", table2_params(setup, n_test, n_dq, config, seed), verify=False) is not None


def cached_table2(setup: ExposureSetup, n_test: int = 1000, n_dq: int = 100, config: TrainingConfig | None = None,
                  progress: ProgressFn | None = None, seed: int = 0) -> dict:
    """``run_table2`` stored as an artifact (per-passage RELQ, retrieved lists, tuning, training info)."""
    import json

    config = config or TrainingConfig(n_dq=n_dq, seed=seed)
    params = table2_params(setup, n_test, n_dq, config, seed)

    def build(tmp) -> dict:
        res = run_table2(setup, n_test, n_dq, config, progress, seed)
        res["per_passage"].to_parquet(tmp / "per_passage.parquet", index=False)
        names = list(res["lists"])
        np.savez(tmp / "lists.npz", test_docs=res["test_docs"], **{f"m{i}": res["lists"][n] for i, n in enumerate(names)})
        (tmp / "info.json").write_text(json.dumps({
            "methods": names, "bm25_tuning": {k: v for k, v in res["bm25_tuning"].items() if k != "grid"},
            "training": res["training"], "ttests": res["ttests"].to_dict(orient="records"),
        }, default=float), encoding="utf-8")
        return {"test_passages": res["test_passages"]}

    art = setup.store.get_or_build("exposure-eval", params, build)
    info = json.loads(art.file("info.json").read_text(encoding="utf-8"))
    per_passage = pd.read_parquet(art.file("per_passage.parquet"))
    with np.load(art.file("lists.npz"), allow_pickle=False) as z:
        lists = {n: z[f"m{i}"] for i, n in enumerate(info["methods"])}
        test = z["test_docs"]
    return {"table": table2(per_passage, info["methods"]), "per_passage": per_passage, "lists": lists, "test_docs": test,
            "ttests": pd.DataFrame(info["ttests"]), "bm25_tuning": info["bm25_tuning"], "training": info["training"],
            "test_passages": int(len(test)), "artifact": art.key}
