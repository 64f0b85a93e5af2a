"""Exact top-k with int8 candidates: an integer GEMM picks, within a proven bound, every passage that
can be in a query's exact top k; those few are re-scored in float64 from the fp32 vectors.

Why: the exact exposure map is one large GEMM (13,013 queries x 20,001 passages x 384 on the default
collection). On CPUs with VNNI (AVX-512 VNNI or AVX-VNNI) an int8 GEMM does four multiply-adds where
fp32 does one: onnxruntime's ``MatMulIntegerToFloat`` took 13 ms for 512 x 384 by 384 x 20,001 against
numpy's sgemm at 38 ms on a Zen 4 host (README: Benchmarks). Without VNNI it is barely faster than
sgemm (1.23x on Zen 1, measured) and the fp32 path stays.

The bound is ``InnerProductIndex``'s, applied to every (query, passage) pair. Each vector is coded
row-wise, x = s_x x' + e_x (``int8_encode``: x' int8, ||e_x|| <= err_x, ||s_x x'|| <= norm_x), so

    |q.x - s_q s_x (q'.x')| <= ||q|| err_x + err_q norm_x,

and onnxruntime's float output, (q'.x') * fl32(s_x), carries three roundings of 2^-24 at most, bounded
by 4 2^-24 (||q|| + err_q) norm_x. ``err_x`` also covers the re-scoring's rounding. Per query: a lower
bound on the k-th largest approximate score (group maxima, as ``topk_rows``) less twice the largest
slack keeps a superset; the per-pair slack then keeps those whose upper bound reaches a bound on the
k-th largest lower bound among them (a histogram's, as above); those are re-scored and the top k taken
(score descending, lower position first). Every member of the exact top k, and every passage tied with its k-th score, survives.
Those whose lower bound reaches that bound too (at least k of them) are re-scored first, and each of the
others only if its upper bound reaches the k-th exact score found so far (WordNet's map: 148 re-scored
per query instead of 224, the selection kernel a quarter faster on one thread, the map about 9% on the
Intel host; the same top k to the bit).

The integer products must be exact: some int8 kernels saturate 16-bit pair sums without VNNI, so the
path runs only after a check of onnxruntime's output against numpy's integer products on extreme
codes. ``EQI_INT8_GEMM``: ``auto`` (default: where the CPU has VNNI), ``on`` (wherever the check
passes: tests), ``off``.
"""
from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

log = logging.getLogger(__name__)
_ZERO_POINT = 128  # queries travel as uint8 (code + 128): onnxruntime's fast kernels are uint8 x int8
_FLOAT_ROUNDING = 4 * 2.0 ** -24  # int32 -> float32, the scale's float32 rounding, the product's
_lock = threading.Lock()
_session = None


def cpu_has_vnni(cpuinfo: str | None = None) -> bool:
    """Whether the CPU multiplies int8 with VNNI instructions (where int8 beats fp32 GEMM by ~3x)."""
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8") as f:
                cpuinfo = f.read()
        except OSError:  # not Linux: no way to tell cheaply, keep fp32
            return False
    flags = set()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
    return bool(flags & {"avx512_vnni", "avx_vnni"})


@lru_cache(maxsize=1)
def _this_cpu_has_vnni() -> bool:
    return cpu_has_vnni()


def enabled() -> bool:
    """Whether ``exact_topk`` takes the int8 path here (``EQI_INT8_GEMM``, the CPU, the exactness check)."""
    mode = os.environ.get("EQI_INT8_GEMM", "auto").strip().lower()
    if mode == "off" or (mode == "auto" and not _this_cpu_has_vnni()):
        return False
    if mode not in ("auto", "on"):
        raise ValueError(f"EQI_INT8_GEMM={mode!r}: expected auto, on or off")
    return _exact_here()


@lru_cache(maxsize=1)
def _exact_here() -> bool:
    """onnxruntime's products match numpy's int64 ones on random and extreme codes (all +-127 pairs:
    where a kernel summing pairs in 16 bits would saturate)."""
    try:
        rng = np.random.default_rng(0)
        dim = 384
        a = rng.integers(-127, 128, (64, dim), dtype=np.int64)
        b = rng.integers(-127, 128, (dim, 48), dtype=np.int64)
        a[:8], b[:, :8] = 127, 127
        a[8:16], b[:, 8:16] = -127, -127
        a[16:24, ::2], a[16:24, 1::2] = 127, -127
        b[::2, 16:24], b[1::2, 16:24] = 127, -127
        got = _run(a.astype(np.int8), np.ascontiguousarray(b.astype(np.int8)), np.ones(b.shape[1], np.float32))
        ok = bool(np.array_equal(got.astype(np.int64), a @ b))
    except Exception as exc:  # an onnxruntime without the op, or a failed session: stay on fp32
        log.info("int8 GEMM unavailable: %s", exc)
        return False
    if not ok:
        log.info("int8 GEMM: onnxruntime's integer products are not exact on this CPU; fp32 stays")
    return ok


_inherited: list = []


def _forget_session_in_child() -> None:
    """A forked child inherits the session but not its threads: it makes its own. The inherited one
    is kept, never freed: its destructor would wait for threads that do not exist in the child."""
    global _session, _lock
    _inherited.append(_session)
    _session, _lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_session_in_child)


def _make_session():
    import onnxruntime as ort
    from onnx import TensorProto, helper

    from eqi_core.rankers.topk import _threads

    graph = helper.make_graph(
        [helper.make_node("MatMulIntegerToFloat", ["A", "B", "one", "b_scale", "zero"], ["Y"], domain="com.microsoft")],
        "int8_scores",
        [helper.make_tensor_value_info("A", TensorProto.UINT8, [None, None]),
         helper.make_tensor_value_info("B", TensorProto.INT8, [None, None]),
         helper.make_tensor_value_info("b_scale", TensorProto.FLOAT, [None])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None, None])],
        initializer=[helper.make_tensor("one", TensorProto.FLOAT, [], [1.0]),
                     helper.make_tensor("zero", TensorProto.UINT8, [], [_ZERO_POINT])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)])
    options = ort.SessionOptions()
    options.intra_op_num_threads = _threads()
    options.inter_op_num_threads = 1
    # outputs go to our numpy buffer (IO binding); without the arena, onnxruntime's own temporaries are
    # freed after each call instead of kept for the process's life (a Dask worker's limit counts them)
    options.enable_cpu_mem_arena = False
    # spinning threads would steal the cores from the selection that runs between two GEMMs
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def _run(query_codes: np.ndarray, codes_t: np.ndarray, scale32: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """float32 (q'.x') * scale for int8 query codes (rows) and transposed passage codes (dim x n),
    written into ``out`` (C-contiguous float32, rows x n) when given: one buffer reused across
    GEMMs, as the fp32 path does (a fresh 41 MB output per call cost 30% in page faults)."""
    global _session
    with _lock:
        if _session is None:
            _session = _make_session()
    shifted = (query_codes.astype(np.int16) + _ZERO_POINT).astype(np.uint8)
    shape = (len(query_codes), codes_t.shape[1])
    if out is None:
        out = np.empty(shape, np.float32)
    binding = _session.io_binding()
    for name, value in (("A", shifted), ("B", codes_t), ("b_scale", scale32)):
        binding.bind_cpu_input(name, value)
    binding.bind_output("Y", "cpu", 0, np.float32, list(shape), out.ctypes.data)
    _session.run_with_iobinding(binding)
    return out


@dataclass(frozen=True)
class Int8Columns:
    """Passages' int8 codes, transposed (dim x n) for the GEMM, with their scales and bound terms."""

    codes_t: np.ndarray
    scale32: np.ndarray
    err: np.ndarray
    norm: np.ndarray

    @classmethod
    def of(cls, docs: np.ndarray) -> Int8Columns:
        from eqi_core.rankers.dense import int8_codes

        codes, scale, err, norm = int8_codes(docs)
        return cls(np.ascontiguousarray(codes.T), scale.astype(np.float32), err, norm)

    @property
    def nbytes(self) -> int:
        return self.codes_t.nbytes + self.scale32.nbytes + self.err.nbytes + self.norm.nbytes

    def __len__(self) -> int:
        return self.codes_t.shape[1]


def int8_block_topk(queries: np.ndarray, docs: np.ndarray, columns: Int8Columns, k: int,
                    buffer: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k (float32 scores from the float64 re-scoring, positions), best first, of finite fp32
    ``queries`` over ``docs``, whose codes are ``columns``: one GEMM, so a block of a few hundred queries.
    ``buffer`` (float32, at least queries x passages) receives the GEMM's scores."""
    from eqi_core.rankers.dense import int8_codes
    from eqi_core.rankers.topk import int8_rescored_topk

    out_s = np.empty((len(queries), k), np.float32)
    out_i = np.empty((len(queries), k), np.int64)
    q_codes, q_scale, q_err, _ = int8_codes(queries)
    q_norm = np.linalg.norm(queries.astype(np.float64), axis=1) * (1 + 2.0 ** -40)
    q_err = q_err + _FLOAT_ROUNDING * (q_norm + q_err)  # the output's roundings, per unit of norm_x
    # each query's largest slack over all passages, twice: the first, coarse cut, in the GEMM's units
    margin = 2 * (q_norm * columns.err.max() + q_err * columns.norm.max()) / q_scale
    approx = _run(q_codes, columns.codes_t, columns.scale32,
                  None if buffer is None else buffer[:len(queries) * len(columns)].reshape(len(queries), len(columns)))
    int8_rescored_topk(approx, k, margin, q_scale, q_norm, q_err, queries, docs, columns.err, columns.norm, out_s, out_i)
    return out_s, out_i
