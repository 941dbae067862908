"""Tracr (PyPI ``tracr-pypi`` 1.0.0, CPU jax) as a :class:`attnsim.compile.compare.System`.

The only module that imports Tracr; it calls Tracr as a library (``tracr.compiler.lib`` builds
the programs, ``compiling.compile_rasp_to_model`` compiles them) and copies none of it.

* programs: ``make_length()``, ``make_reverse(tokens)``, ``make_hist()``,
  ``make_sort_unique(tokens, tokens)``, ``make_frac_prevs(numerical(Map(t == 0 -> 1 else 0, tokens)))``;
  vocabulary {0..N-1}, ``max_seq_len`` N, BOS ``"BOS"``, Tracr's default ``mlp_exactness`` (100);
* layers: ``model_config.num_layers`` (attention + MLP blocks, as ours);
* parameters: the entries of ``model.params`` (embeddings and every layer; Tracr's unembedding is
  a projection, not a parameter, so it is not counted), dense and non-zero;
* forward: ``jax.jit`` of the model's forward on a batch ``[BOS] + tokens`` (float32, Tracr's
  default), outputs decoded by the model's output encoder, the BOS position dropped.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnsim.compile.compare import Built

INSTALL = 'pip install "attnsim[tracr]"'
BOS = "BOS"


class TracrUnavailable(ImportError):
    """Tracr (or the jax it needs) cannot be imported."""


def _import() -> tuple[Any, Any, Any, Any]:
    try:
        import jax
        from tracr.compiler import compiling, lib
        from tracr.rasp import rasp
    except ImportError as exc:
        raise TracrUnavailable(f"Tracr is not installed ({exc}); install it with: {INSTALL}") from None
    return jax, compiling, lib, rasp


class TracrSystem:
    """Tracr's library programs, compiled by Tracr and run with its jitted forward."""

    name = "Tracr"

    def __init__(self, warm_up: bool = True) -> None:
        self._jax, self._compiling, self._lib, self._rasp = _import()
        if warm_up:  # jax's one-time start-up, so that no program's compile time carries it
            self.build("length", 2).forwards["jit float32"](np.zeros((1, 1), dtype=np.int64))

    def program(self, name: str) -> Any:
        """Tracr's library program for one of our classic program names."""
        lib, rasp = self._lib, self._rasp
        if name == "length":
            return lib.make_length()
        if name == "reverse":
            return lib.make_reverse(rasp.tokens)
        if name == "histogram":
            return lib.make_hist()
        if name == "sort_unique":
            return lib.make_sort_unique(rasp.tokens, rasp.tokens)
        if name == "frac_prevs":
            return lib.make_frac_prevs(rasp.numerical(rasp.Map(lambda t: 1 if t == 0 else 0, rasp.tokens)))
        raise KeyError(f"Tracr has no library program for {name!r}")

    def build(self, program: str, n: int) -> Built:
        """Compile Tracr's ``program`` at max_seq_len n over tokens 0..n-1."""
        jax = self._jax
        model = self._compiling.compile_rasp_to_model(
            self.program(program), vocab=set(range(n)), max_seq_len=n, compiler_bos=BOS
        )
        leaves = [np.asarray(x) for x in jax.tree_util.tree_leaves(model.params)]
        enc = model.input_encoder.encoding_map
        ids = np.array([enc[t] for t in range(n)], dtype=np.int32)
        bos = enc[BOS]
        dec = getattr(model.output_encoder, "encoding_map", None)
        values = None
        if dec is not None:  # categorical output: argmax index -> value
            values = np.empty(max(dec.values()) + 1, dtype=object)
            for value, i in dec.items():
                values[i] = value
        params = model.params
        jitted = jax.jit(lambda p, t: model.forward(p, t).unembedded_output)

        def forward(batch: np.ndarray) -> np.ndarray:
            tokens = np.concatenate([np.full((len(batch), 1), bos, dtype=np.int32), ids[batch]], axis=1)
            out = np.asarray(jitted(params, tokens))[:, 1:]
            return out if values is None else values[out]

        return Built(
            layers=int(model.model_config.num_layers),
            params=sum(int(x.size) for x in leaves),
            params_nonzero=sum(int(np.count_nonzero(x)) for x in leaves),
            forwards={"jit float32": forward},
        )
