"""Theorem 6 in the kernel, stage by stage: U's own exported nodes proved equal to parts of the
Coq encoder layer (``coq/EncoderLayer.v``) for every capacity.

Each :class:`Stage` is a hand-written theory with its theorems' statements generated here from U's
layout (where X and the header's d sit, the query grid) and U's export (a node U did not label is
named by its term, :func:`node_by_term`).  Proved so far, for every capacity N, D, H, K, F, every
layer (``params``) and every input X zero beyond ``d_model`` columns, both variants unless said:

* :data:`ROW_MEAN` (``coq/UniversalRowMean.v``): node ``ln_x.mean`` at every query of its grid is
  ``d_model`` times EncoderLayer's ``row_mean`` of the query's token row;
* :data:`ROW_STATS` (``coq/UniversalRowStats.v``): LayerNorm 1's centred value and variance are
  EncoderLayer's ``X i j - row_mean P X i`` and ``row_var P X i``;
* :data:`LAYER_NORM1` (``coq/UniversalLayerNorm1.v``): LayerNorm 1's value is EncoderLayer's
  ``norm1 sqrtf P n X i j`` for rows i < n and columns j < d_model (eps, norm1's weight and bias
  read where U's layout puts them; the offsets are generated definitions);
* :data:`Q_PROJ` (``coq/UniversalQProj.v``, compact U: the shallow variant has no Q node): node
  ``Q.biased`` is EncoderLayer's ``proj P n (Wq P) (bq P) Z t i c``, Z = norm1 X when pre-norm,
  else X; :data:`K_PROJ` (``coq/UniversalKProj.v``): the same for ``K.biased`` at the key token;
* :data:`V_PROJ` (``coq/UniversalVProj.v``, both variants): node ``V.biased`` on the vwo grid is
  ``proj P n (Wv P) (bv P) Z t i c`` at the value token i (Wv: matrices [2 H, 3 H) of wqkv);
* :data:`SCORES` (``coq/UniversalScores.v``, both variants): node ``attn.logit`` on the attention grid
  is EncoderLayer's ``scores P M n Z t i j`` for i, j < n (the scale gate, the float mask at the
  mask_add block; Wq and bq zero beyond d_head columns).
* :data:`SOFTMAX` (``coq/UniversalSoftmax.v``, both variants, over MathComp-analysis' ``expR``):
  node ``attn.exp`` (exp(logit - row max) at an allowed key, else 0) on the attention grid divided
  by node ``attn.o.den`` (its row sum) on the head grid is EncoderLayer's ``softmax_rows expR M n
  (scores P M n Z t) i j`` for i < n (the row max cancels; the boolean mask at the mask_blocked
  block, n at the header), and the row sum is positive when query i sees a key.
* :data:`HEADS` (``coq/UniversalHeads.v``, both variants, over ``expR``): node ``attn.o`` (the sum
  over the keys of attn.exp times vw, vw the sum over c of V.biased times Wo, over the row sum
  attn.o.den) at every query of the head grid attn.heads (row i < n, column e, head t) is head t's
  term of EncoderLayer's ``self_attn``, ``\\sum_(c < K | c < d_head) head expR P M n Z t i c * Wo P t
  c e`` (Wo at the wo block, zero beyond d_head rows; no premise that query i sees a key: U's 0 / 0
  is MathComp's 0, the empty softmax row's head 0).  The proof's lemmas about a sum node and
  ``_head_out`` (``agg_stride``, ``head_out_sum``) hold on any grid whose selectors pick the keys.
* :data:`ATTN_OUT` (``coq/UniversalAttnOut.v``, both variants, over ``expR``): node ``out.R`` (the sum
  over the heads of attn.r_terms: attn.o plus, at h = 0, bo and the residual gate times X) at every
  query of the out grid (row i < n, column e < d_model) is EncoderLayer's ``add_residual P X
  (self_attn expR P M n Z) i e``: the residual connection and self-attention before LayerNorm (the
  residual gate and bo where U's layout puts them; Wo zero beyond nhead heads; 0 < H).
* :data:`Y1` (``coq/UniversalY1.v``, both variants, over ``expR``): node ``out.Y1`` (LayerNorm 1 of
  R when post-norm, else R) at every query of the out grid (row i < n, column e < d_model) is
  EncoderLayer's x1 before the FFN, ``norm1 sqrtf P n X1 i e`` when post-norm, else ``X1 i e``, X1 =
  ``add_residual P X (self_attn expR P M n Z)``; R's mean from ``out.R_sum`` (the sum over (e, h) of
  attn.r_terms) over d, its variance from ``out.R_sq`` (the sum over (e, h, h2) of U's square terms
  O_h O_h2 + [h2 = 0] 2 O_h c + [h = h2 = 0] c^2, i.e. of R^2) over d minus the squared mean (the
  post gate where U's layout puts it; Wo and bo zero beyond d_model columns).
* :data:`FFN_ACT` (``coq/UniversalFfnAct.v``, both variants, over ``expR``): node ``ffn2.u.act`` at
  every query of the grid ffn2.products (row i < n, column e, feature f) is EncoderLayer's
  ``activation P (\\sum_(j' < D | j' < d_model) Z2 i j' * W1 P j' f + b1 P 0 f)``, Z2 = norm2 X1
  (pre-norm), norm1 X1 (post-norm), else X1: U's LayerNorm folded into sums of ffn1.rgw, ffn1.gw and
  ffn1.bw over (h, e'); norm2's weight and bias, W1 (zero beyond d_model rows) and b1 where U's
  layout puts them; the premise that ``activation P`` is the function U's gelu / gelu_tanh gates
  select (geluf, gelu_tanhf, else ReLU).
* :data:`FFN_OUT` (``coq/UniversalFfnOut.v``, both variants, over ``expR``): node ``out.R2`` (c2 = the
  residual gate times out.Y1 plus b2, plus out.ffn, the sum over f of ffn2.u.act times W2) at every
  query of the out grid (row i < n, column e < d_model) is EncoderLayer's ``add_residual P x1
  (ff_block P n Z2) i e``, x1 = norm1 X1 when post-norm, else X1 (W2 zero beyond dim_ff rows; W2
  and b2 where U's layout puts them).
* :data:`GRAM_ACT` (``coq/UniversalGramAct.v``, both variants, over ``expR``): on the grid
  ln2.gram_terms (row i < n, features f, f2), nodes ``gram.u.act`` (at f) and ``gram.u2.act`` (at
  f2), R's statistics recomputed there (``gram1.*``), are FFN_ACT's right-hand side at f and f2 (its
  premises); node ``gram`` (the sum over e of gram.prod = W2[f, e] W2[f2, e]) is ``\\sum_(e < D) W2 P f
  e * W2 P f2 e`` over all D columns (W2 where U's layout puts it, no premise on its padding).
* :data:`Y2` (``coq/UniversalY2.v``, both variants, over ``expR``): node ``out.Y2`` (LayerNorm 2 of
  R2 when post-norm, else R2) at every query of the out grid (row i < n, column e < d_model) is
  EncoderLayer's ``norm2 sqrtf P n X2 i e`` when post-norm, else ``X2 i e``, X2 = ``add_residual P
  x1 (ff_block P n Z2)``: R2's mean from out.R2_sum (the sum over (e, f) of ln2.sum_terms), its
  second moment from out.R2_sq + out.R2_gram (the Gram identity); norm1's weight and bias, b2 and
  W2 zero beyond d_model columns, 0 < F.
* :data:`LAYER` (``coq/UniversalLayer.v``, both variants, over ``expR``): node ``Y`` (where(ffn gate,
  out.Y2, out.Y1) times mask.rows, i < n, and mask.cols, e < d) at every query of the out grid
  (every row i < N, column e < D) is EncoderLayer's ``encoder_layer expR sqrtf P M n X i e`` for
  every layer except post-norm with an FFN (not covered: LayerNorm 2), for every layer given
  out.Y2's equation (``U_<v>_layer_of_y2``), and node ``U`` at X's entry (i, e) is the same (the
  ffn gate where U's layout puts it; FFN_OUT's premises but i < n and e < d_model).

* :data:`THEOREM6` (``coq/UniversalTheorem6.v``, both variants, over ``expR``): **Theorem 6**, U's
  whole layer: node ``Y`` at every query of the out grid (every i < N, e < D) and node ``U`` at X's
  entry (i, e) are EncoderLayer's ``encoder_layer expR sqrtf P M n X i e`` for every layer (LAYER's
  ``layer_of_y2`` with Y2's theorem), the premises the two stages' (0 < H, 0 < F).
* :data:`STACK` (``coq/UniversalStack.v``, both variants, over ``expR``): **stacks by looping**,
  U's pass (node ``U`` at every position) iterated m times holds at X's entry (i, e) the m-layer
  encoder ``encoder_stack`` (:data:`ENCODER_STACK`) for every m, with Theorem 6's premises (but
  X's) on each record seen in the slot a pass reads (:func:`stack_theorems`).

The stages are parts of U's layer: each obligation's facts say it is not the catalogue's whole
construction (``KernelFacts.registered`` False).  :data:`THEOREM6` is: its obligations
(``simulator/kernel/UniversalTheorem6`` for Theorem 6 and ``.../multi-head`` for Theorem 9, the
same theorems with H a variable: that row checks H is bound and unbounded, and rests on the first)
are rows of U's own construction, registered, over the sizes N, D, H, K, F; :data:`STACK`'s
(``simulator-frame/kernel/UniversalStack``) is the stacks' construction's, over them and m.

The build of a stage, through the content-addressed cache of :mod:`attnsim.proofs.coq_build`:

1. hand-written: ``Semantics.v`` (pinned), ``Lemmas.v``, ``EncoderLayer.v``, ``UniversalLemmas.v``
   and the theories the stage requires;
2. generated: ``<Theory>Nodes.v`` for each stage of :data:`STAGES` up to this one (U's export,
   :mod:`attnsim.universal.kernel_export`, cut by :func:`node_libraries`: a stage's library holds
   the nodes its statements reach that no earlier one holds and exports the one before, so a
   changed node recompiles the libraries and stages from the first that reads it on, not the
   stages before it), ``<Theory>Statement.v`` (the statements);
3. the theory and its gate (each theorem typed by its generated statement, ``Print Assumptions``,
   :mod:`attnsim.proofs.coq_gate`); ``coqchk`` over the libraries.

Proved only when every file is accepted, coqchk finds no axiom in our files and every assumption
is in :data:`~attnsim.proofs.coq_gate.ALLOWED_AXIOMS`.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace

from attnsim.constructions.kernel import COQ_BUDGET, FORBIDDEN, SEMANTICS_SHA256, coq_sources, first_error
from attnsim.proofs import coq_build as B
from attnsim.proofs import coq_gate as G
from attnsim.proofs.coq import CoqProgram, module_text
from attnsim.proofs.coq_encoder_layer import ENCODER_LAYER_SHA256
from attnsim.proofs.coq_statement import nat_term
from attnsim.proofs.obligation import KernelFacts, Obligation, Outcome
from attnsim.rasp.core import built_once
from attnsim.rasp.layout import Block, Layout
from attnsim.universal import kernel_nodes as KN
from attnsim.universal.kernel_export import SIZES, export_universal, program_name
from attnsim.universal.program import VARIANTS
from attnsim.universal.record import GATES, HEADER, RECORD
from attnsim.universal.universal import UniversalSimulator

HAND_WRITTEN = ("Semantics", "Lemmas", "EncoderLayer", "UniversalLemmas")
QUERY_GRID = "proj.products"  # the grid whose every position reads the row statistics
CONSTRUCTION = "simulator-stages"
PAPER_REF = "Theorem 6: U's layout and stages (scores, attention, ffn, act, output, write)"
THEOREM_CONSTRUCTION = "simulator"  # U's own construction (attnsim.universal.obligations.CID)
THEOREM_REF = "Theorem 6"  # its paper result (attnsim.universal.obligations.THM6)
THEOREM9_REF = "Theorem 9 / Corollary 9.1"  # multi-head (attnsim.universal.obligations.THM9)
_SIZES = " ".join(SIZES)


@built_once
def _layout(variant: str) -> Layout:
    """U's layout over the symbolic capacity (built once per process, as its export is)."""
    return UniversalSimulator.over_symbolic_capacity(variant).layout


def _block(variant: str, name: str) -> Block:
    layout = _layout(variant)
    found = [b for b in layout.blocks if b.name == name]
    if len(found) != 1:
        raise ValueError(f"{variant} U's layout has {len(found)} blocks named {name!r}")
    return found[0]


_LABELLED = re.compile(r"^\(\* (.*) \*\)\nDefinition (\S+) ", re.M)


@functools.lru_cache(maxsize=4)
def _label_stems(prefix: str, text: str) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """The export's (label, name) pairs and each name's label as printed (``prefix`` + the label)."""
    labels = _LABELLED.findall(text)
    return labels, {name: prefix + re.sub(r"[^A-Za-z0-9_]", "_", label) for label, name in labels}


def _unambiguous(variant: str, node: str) -> None:
    """Refuse a statement naming ``node`` when ``node`` prints its own label (``<prefix>_<label>``) and
    another exported node's label prints the same way (``out.R_sum`` and ``out.R.sum`` both give
    ``out_R_sum``; the exporter suffixes the later one): the name would not say which node is meant."""
    labels, stem = _label_stems(program_name(variant) + "_", export_universal(variant).text)
    if stem.get(node) != node:  # an unlabelled node, or one named by its term (node_by_term)
        return
    same = sorted(label for label, name in labels if stem[name] == node)
    if len(same) > 1:
        raise ValueError(f"{variant} U's nodes labelled {' and '.join(map(repr, same))} both print as {node}")


def _call(variant: str, node: str) -> str:
    _unambiguous(variant, node)
    return f"{node} " + " ".join(f"(Z.of_nat {s})" for s in SIZES)


def node_by_term(variant: str, term: str, **nodes: str) -> str:
    """The name of the one exported node of ``variant`` whose term is ``term``, each ``{ref}`` in it
    the node ``nodes[ref]`` read over the sizes (``"*"``: any node): how a statement names a node
    U did not label."""
    marks = {k: f"\0{k}\0" if v == "*" else f"({v} {_SIZES})" for k, v in nodes.items()}
    body = term.format(**marks)
    pattern = re.escape(body)
    for k, v in nodes.items():
        if v == "*":  # any node
            pattern = pattern.replace(re.escape(marks[k]), rf"\(\S+ {_SIZES}\)")
    pattern = rf"^Definition (\S+) \({_SIZES} : Z\) : sop :=\n  {pattern}\.$"
    found = re.findall(pattern, export_universal(variant).text, re.M)
    if len(found) != 1:
        raise ValueError(f"{variant} U has {len(found)} nodes {body}, not one")
    return str(found[0])


def _premises(variant: str, header: bool = False) -> tuple[str, str, str]:
    """The binders' common part, the hypotheses on X (and d in the header) and on the query:
    from U's layout (block X, the header's d, the grid proj.products)."""
    X, grid = _block(variant, "X"), _block(variant, QUERY_GRID)
    if X.channel != "tokens":
        raise ValueError(f"{variant} U's X is not in the tokens channel")
    rows, cols = nat_term(X.rows), nat_term(X.cols)
    gr, gc = nat_term(grid.rows), nat_term(grid.cols)
    binders = (
        f"  forall (R : realFieldType) (expf sqrtf geluf gelu_tanhf : R -> R) ({_SIZES} : nat)\n"
        f"    (P : params R D H K F) (X : 'M[R]_({rows}, {cols})) (x : seq R) (q : nat) (i : 'I_N)"
    )
    on_x = f"  encodes x {nat_term(X.offset)} {nat_term(X.stack)} {rows} {cols} (fun _ => X) ->\n"
    if header:
        d_at = _block(variant, "header").offset + HEADER.index("d")
        on_x += f"  nth 0 x {nat_term(d_at)} = (d_model P)%:R ->\n"
    query = f"(q < ({nat_term(grid.stack)} * {gr} * {gc})%nat)%nat -> (q %/ {gc} %/ {gr} %% N)%nat = i"
    return binders, on_x, query


_PAD = "(forall j : 'I_D, (d_model P <= j)%nat -> X i j = 0)"


def _eval(variant: str, node: str) -> str:
    return f"eval expf sqrtf geluf gelu_tanhf ({_call(variant, node)}) x q"


def row_mean_theorems(variant: str) -> list[tuple[str, str]]:
    """U's ``ln_x.mean`` at every query of its grid: d_model times EncoderLayer's row_mean."""
    binders, on_x, query = _premises(variant)
    st = (
        f"{binders},\n{on_x}  (0 < d_model P)%nat -> {_PAD} ->\n  {query} ->\n"
        f"  {_eval(variant, program_name(variant) + '_ln_x_mean')} = (d_model P)%:R * row_mean P X i"
    )
    return [(f"{program_name(variant)}_ln_x_mean_spec", st)]


def row_stats_theorems(variant: str) -> list[tuple[str, str]]:
    """U's centred value (proj.x minus ln_x.mean.per_d) and variance (ln_x.meansq.per_d minus the
    square of ln_x.mean.per_d) at every query of their grid: EncoderLayer's X i j - row_mean and
    row_var, d_model read from the header."""
    binders, on_x, query = _premises(variant, header=True)
    gc = nat_term(_block(variant, QUERY_GRID).cols)
    pre = program_name(variant)
    per_d = f"{pre}_ln_x_mean_per_d"
    centred = node_by_term(variant, "(Map2 PSub {a} {b})", a=f"{pre}_proj_x", b=per_d)
    square = node_by_term(variant, "(Map1 PSquare {a})", a=per_d)
    var = node_by_term(variant, "(Map2 PSub {a} {b})", a=f"{pre}_ln_x_meansq_per_d", b=square)
    return [
        (
            f"{pre}_ln_x_centered_spec",
            f"{binders} (j : 'I_D),\n{on_x}  (0 < d_model P)%nat -> {_PAD} ->\n  {query} -> (q %% {gc})%nat = j ->\n"
            f"  {_eval(variant, centred)} = X i j - row_mean P X i",
        ),
        (
            f"{pre}_ln_x_var_spec",
            f"{binders},\n{on_x}  (0 < d_model P)%nat -> (d_model P <= D)%nat -> {_PAD} ->\n  {query} ->\n"
            f"  {_eval(variant, var)} = row_var P X i",
        ),
    ]


# the record's operands the LayerNorm-1 statement reads, as fields of EncoderLayer.v's params
_NORM1 = {"g1": ("norm1_weight", "norm1_w"), "be1": ("norm1_bias", "norm1_b")}


def _offset_name(variant: str, block: str) -> str:
    return f"{program_name(variant)}_{block}_offset"


def _offset_definitions(variant: str, *blocks: str) -> list[str]:
    """The offsets of ``blocks`` in U's layout, as Coq definitions over the sizes."""
    return [
        f"Definition {_offset_name(variant, b)} ({_SIZES} : nat) : nat :=\n  {nat_term(_block(variant, b).offset)}."
        for b in blocks
    ]


def _shape(variant: str, name: str) -> tuple[str, str, str]:
    """Block or grid ``name``'s (stack, rows, cols) as Coq terms."""
    b = _block(variant, name)
    return nat_term(b.stack), nat_term(b.rows), nat_term(b.cols)


def _fits(variant: str, name: str) -> str:
    """The premise that the sequence x covers block or grid ``name``."""
    s, r, c = _shape(variant, name)
    return f"  (({s} * {r} * {c})%nat <= size x)%nat ->\n"


def _check_operands(expected: Mapping[str, str]) -> None:
    """Each of U's record blocks named in ``expected`` holds the torch operand given there."""
    operands = {name: src.operand for name, _, src in RECORD}
    for block, operand in expected.items():
        if operands.get(block) != operand:
            raise ValueError(f"U's record block {block} holds {operands.get(block)!r}, not {operand}")


def layer_norm1_definitions(variant: str) -> list[str]:
    """The offsets of the gates, g1 and be1 blocks in U's layout, as Coq definitions over the sizes."""
    return _offset_definitions(variant, "gates", *_NORM1)


def layer_norm1_theorems(variant: str) -> list[tuple[str, str]]:
    """U's LayerNorm-1 value (the centred value times 1 / sqrt(variance + eps), times g1, plus be1)
    at every query of its grid, row i < n and column j < d_model: EncoderLayer's ``norm1 sqrtf P n X
    i j``; eps, norm1's weight and bias read where U's layout and input map put them."""
    _check_operands({block: operand for block, (operand, _) in _NORM1.items()})
    binders, on_x, query = _premises(variant, header=True)
    gc = nat_term(_block(variant, QUERY_GRID).cols)
    pre = program_name(variant)
    per_d = f"{pre}_ln_x_mean_per_d"
    centred = node_by_term(variant, "(Map2 PSub {a} {b})", a=f"{pre}_proj_x", b=per_d)
    square = node_by_term(variant, "(Map1 PSquare {a})", a=per_d)
    var = node_by_term(variant, "(Map2 PSub {a} {b})", a=f"{pre}_ln_x_meansq_per_d", b=square)
    plus_eps = node_by_term(variant, "(Map2 PAdd {a} {b})", a=var, b=f"{pre}_eps")
    root = node_by_term(variant, "(Map1 PSqrt {a})", a=plus_eps)
    rstd = node_by_term(variant, "(Map1 PReciprocal {a})", a=root)
    scaled = node_by_term(variant, "(Map2 PMul {a} {b})", a=centred, b=rstd)
    weighted = node_by_term(variant, "(Map2 PMul {a} {b})", a=scaled, b="*")
    value = node_by_term(variant, "(Map2 PAdd {a} {b})", a=weighted, b="*")
    return [
        (
            f"{pre}_ln1_spec",
            f"{binders} (j : 'I_D) (n : nat),\n{on_x}{_norm1_premises(variant)}"
            f"  (0 < d_model P)%nat -> (d_model P <= D)%nat -> {_PAD} ->\n  {query} -> (q %% {gc})%nat = j ->\n"
            f"  (i < n)%nat -> (j < d_model P)%nat ->\n  {_eval(variant, value)} = norm1 sqrtf P n X i j",
        )
    ]


def _norm1_premises(variant: str) -> str:
    """eps, norm1's weight and bias where U's layout puts them (the LayerNorm-1 stage's premises)."""
    blocks = "".join(
        f"  encodes x ({_offset_name(variant, b)} {_SIZES}) {nat_term(_block(variant, b).stack)} "
        f"{nat_term(_block(variant, b).rows)} {nat_term(_block(variant, b).cols)} (fun _ => {field} P) ->\n"
        for b, (_, field) in _NORM1.items()
    )
    return f"  nth 0 x ({_offset_name(variant, 'gates')} {_SIZES} + {GATES.index('eps')})%nat = eps P ->\n{blocks}"


_QKV = ((("t", "3"), ("h", "H"), ("l", "D"), ("c", "K")), (("t", "3"), ("h", "H"), ("c", "K")))


def _weight_offsets(variant: str) -> list[str]:
    """The offsets of the wqkv and bqkv blocks in U's layout, as Coq definitions over the sizes."""
    return _offset_definitions(variant, "wqkv", "bqkv")


def q_proj_definitions(variant: str) -> list[str]:
    """The offsets of the wqkv and bqkv blocks (compact U: the shallow variant has no Q node)."""
    return _weight_offsets(variant) if variant == "compact" else []


def v_proj_definitions(variant: str) -> list[str]:
    """The shallow variant's wqkv and bqkv offsets (compact U's are the Q stage's definitions)."""
    return _weight_offsets(variant) if variant == "shallow" else []


# per part: its index p in torch's in_proj (q, k, v), its grid, its node's token and column read at
# the query q, in the grid's row and column extents gr, gc (the head: q / gc / gr / N)
_PARTS = {
    "q": (0, "scores.products", "(q %/ {gc} %/ {gr} %% N)%nat = i", "(q %% {gc})%nat = c"),
    "k": (1, "scores.products", "(q %/ {gc} %% N)%nat = i", "(q %% {gc})%nat = c"),
    "v": (2, "vwo.products", "(q %/ {gc} %/ {gr} %% N)%nat = i", "(q %/ {gc} %% {gr})%nat = c"),
}


def _proj_theorem(variant: str, part: str) -> list[tuple[str, str]]:
    """U's ``Q.biased`` (part "q", compact U), ``K.biased`` ("k", compact U) or ``V.biased`` ("v",
    both variants) at every query of its grid (scores.products for Q and K, vwo.products for V;
    head t, token i: the query's row for Q, the key's for K and V; column c): the projection of
    EncoderLayer's self-attention input (norm1 X when pre-norm, else X); the part's weights the
    matrices [p H, (p + 1) H) of the wqkv block (p = 0, 1, 2 for q, k, v), its bias row block p of
    bqkv."""
    p, grid_name, token, column = _PARTS[part]
    if variant != "compact" and part != "v":
        return []
    axes = {name: (ax, src.operand) for name, ax, src in RECORD}
    want = {"wqkv": (_QKV[0], "in_proj_weight"), "bqkv": (_QKV[1], "in_proj_bias")}
    for b, expected in want.items():
        if axes.get(b) != expected:
            raise ValueError(f"U's record block {b} is {axes.get(b)}, not {expected}")
    binders, on_x, _ = _premises(variant, header=True)
    grid = _block(variant, grid_name)
    proj = _block(variant, QUERY_GRID)
    gs, gr, gc = nat_term(grid.stack), nat_term(grid.rows), nat_term(grid.cols)
    pre = program_name(variant)
    wqkv, bqkv = _offset_name(variant, "wqkv"), _offset_name(variant, "bqkv")
    # the part's matrices in the stack (3, H) of D x K (weights), its row block of the 3 x H x K biases
    times = "" if p == 1 else f"{p} * "
    w_at = f"({wqkv} {_SIZES})" if p == 0 else f"({wqkv} {_SIZES} + {times}H * D * K)%nat"
    b_at = f"({bqkv} {_SIZES})" if p == 0 else f"({bqkv} {_SIZES} + {times}H * K)%nat"
    where = {"gc": gc, "gr": gr}
    W, b, node = f"W{part}", f"b{part}", f"{pre}_{part.upper()}_biased"
    z = "(if norm P is PreNorm then norm1 sqrtf P n X else X)"
    st = (
        f"{binders} (t : 'I_H) (c : 'I_K) (n : nat),\n{on_x}{_norm1_premises(variant)}"
        f"  nth 0 x ({_offset_name(variant, 'gates')} {_SIZES} + {GATES.index('pre')})%nat"
        " = (if norm P is PreNorm then 1 else 0) ->\n"
        f"  encodes x {w_at} H D K ({W} P) ->\n"
        f"  encodes x {b_at} 1 H K (fun _ => \\matrix_(t, c) {b} P t 0 c) ->\n"
        f"  (({nat_term(proj.stack)} * {nat_term(proj.rows)} * {nat_term(proj.cols)})%nat <= size x)%nat ->\n"
        f"  (forall (t : 'I_H) (j : 'I_D) (c : 'I_K), (d_model P <= j)%nat -> {W} P t j c = 0) ->\n"
        f"  (0 < d_model P)%nat -> (d_model P <= D)%nat -> {_PAD} ->\n"
        f"  (q < ({gs} * {gr} * {gc})%nat)%nat -> (q %/ {gc} %/ {gr} %/ N)%nat = t -> {token.format(**where)} ->\n"
        f"  {column.format(**where)} -> (i < n)%nat -> (c < d_head P)%nat ->\n"
        f"  {_eval(variant, node)} = proj P n ({W} P) ({b} P) {z} t i c"
    )
    return [(f"{pre}_{part}_spec", st)]


def q_proj_theorems(variant: str) -> list[tuple[str, str]]:
    """Compact U's Q projection (see :func:`_proj_theorem`)."""
    return _proj_theorem(variant, "q")


def k_proj_theorems(variant: str) -> list[tuple[str, str]]:
    """Compact U's K projection (see :func:`_proj_theorem`)."""
    return _proj_theorem(variant, "k")


def v_proj_theorems(variant: str) -> list[tuple[str, str]]:
    """U's V projection, both variants (see :func:`_proj_theorem`)."""
    return _proj_theorem(variant, "v")


def scores_definitions(variant: str) -> list[str]:
    """The offset of the additive mask's block in U's layout, as a Coq definition over the sizes."""
    return _offset_definitions(variant, "mask_add")


def _scores_premises(variant: str) -> tuple[str, str, str]:
    """The scores stage's binders (through the key j and n), its premises on the input (weights,
    gates, masks, sizes) and its premises on the query q of the attention grid (head t, row i, key
    j); see :func:`scores_theorems`."""
    names = {name for name, _, _ in RECORD}
    if not {"wqkv", "bqkv"} <= names:
        raise ValueError("U's record has no wqkv or bqkv block")
    if nat_term(_block(variant, "mask_add").stack) != "1":
        raise ValueError(f"{variant} U's mask_add block is not one matrix")
    binders, on_x, _ = _premises(variant, header=True)
    binders = binders.replace("(X : ", "(M : mask R N) (X : ")
    grid, proj, mask = _block(variant, "attn.products"), _block(variant, QUERY_GRID), _block(variant, "mask_add")
    # the grid of the products the scores sum: Q.biased * K.biased (compact), the spread (shallow)
    prod = _block(variant, "scores.products" if variant == "compact" else "scores.spread")
    gs, gr, gc = nat_term(grid.stack), nat_term(grid.rows), nat_term(grid.cols)
    wqkv, bqkv, gates = (_offset_name(variant, b) for b in ("wqkv", "bqkv", "gates"))
    bias = "(fun _ => \\matrix_(t, c) {} P t 0 c)"
    on_input = (
        f"{on_x}{_norm1_premises(variant)}"
        f"  nth 0 x ({gates} {_SIZES} + {GATES.index('pre')})%nat = (if norm P is PreNorm then 1 else 0) ->\n"
        f"  nth 0 x ({gates} {_SIZES} + {GATES.index('scale')})%nat = scale P ->\n"
        f"  encodes x ({_offset_name(variant, 'mask_add')} {_SIZES}) 1 {nat_term(mask.rows)} {nat_term(mask.cols)}"
        " (fun _ => additive M) ->\n"
        f"  encodes x ({wqkv} {_SIZES}) H D K (Wq P) ->\n"
        f"  encodes x ({wqkv} {_SIZES} + H * D * K)%nat H D K (Wk P) ->\n"
        f"  encodes x ({bqkv} {_SIZES}) 1 H K {bias.format('bq')} ->\n"
        f"  encodes x ({bqkv} {_SIZES} + H * K)%nat 1 H K {bias.format('bk')} ->\n"
        f"  (({nat_term(proj.stack)} * {nat_term(proj.rows)} * {nat_term(proj.cols)})%nat <= size x)%nat ->\n"
        f"  (({nat_term(prod.stack)} * {nat_term(prod.rows)} * {nat_term(prod.cols)})%nat <= size x)%nat ->\n"
        "  (forall (t : 'I_H) (j : 'I_D) (c : 'I_K), (d_model P <= j)%nat -> Wq P t j c = 0) ->\n"
        "  (forall (t : 'I_H) (j : 'I_D) (c : 'I_K), (d_model P <= j)%nat -> Wk P t j c = 0) ->\n"
        "  (forall (t : 'I_H) (j : 'I_D) (c : 'I_K), (d_head P <= c)%nat -> Wq P t j c = 0) ->\n"
        "  (forall (t : 'I_H) (c : 'I_K), (d_head P <= c)%nat -> bq P t 0 c = 0) ->\n"
        "  (0 < d_model P)%nat -> (d_model P <= D)%nat ->\n"
        "  (forall (i : 'I_N) (j : 'I_D), (d_model P <= j)%nat -> X i j = 0) ->\n"
    )
    query = (
        f"  (q < ({gs} * {gr} * {gc})%nat)%nat -> (q %/ {gc} %/ {gr} %/ N)%nat = t ->\n"
        f"  (q %/ {gc} %/ {gr} %% N)%nat = i -> (q %/ {gc} %% {gr})%nat = j -> (i < n)%nat ->"
    )
    return f"{binders} (t : 'I_H) (j : 'I_N) (n : nat)", on_input, query


_Z = "(if norm P is PreNorm then norm1 sqrtf P n X else X)"


def scores_theorems(variant: str) -> list[tuple[str, str]]:
    """U's ``attn.logit`` (the scores node times the scale gate, plus the additive mask) at every
    query of its grid (attn.products: head t, query row i, key j): EncoderLayer's ``scores P M n Z t
    i j``, Z = norm1 X when pre-norm, else X, for i, j < n, both variants.  Wq, bq, Wk and bk where
    U's layout puts them (as the Q and K stages), the scale at the gate ``scale``, the mask's float
    part at the mask_add block; Wq and bq zero beyond d_head columns and every row of X zero beyond
    d_model columns (U's input map pads them so); the sequence covers the grid the scores sum
    (scores.products in compact U, the shallow variant's scores.spread)."""
    binders, on_input, query = _scores_premises(variant)
    pre = program_name(variant)
    st = (
        f"{binders},\n{on_input}{query} (j < n)%nat ->\n"
        f"  {_eval(variant, pre + '_attn_logit')}\n"
        f"  = scores P M n {_Z} t i j"
    )
    return [(f"{pre}_scores_spec", st)]


def softmax_definitions(variant: str) -> list[str]:
    """The offset of the boolean mask's block in U's layout, as a Coq definition over the sizes."""
    return _offset_definitions(variant, "mask_blocked")


def _softmax_premises(variant: str, head_query: bool = True) -> tuple[str, str, str]:
    """The softmax stage's binders (through the key j, n and the head-grid query p), its premises on
    the input (the scores stage's, n at the header, the boolean mask, the attention grid's size, the
    head-grid query p on head t, row i) and its premises on the attention-grid query q; see
    :func:`softmax_theorems`."""
    binders, on_input, query = _scores_premises(variant)
    blocked, heads = _block(variant, "mask_blocked"), _block(variant, "attn.heads")
    if (nat_term(heads.stack), nat_term(heads.rows), nat_term(heads.cols)) != ("N", "D", "H"):
        raise ValueError(f"{variant} U's attn.heads grid is not (i, e, h) over N, D, H")
    if nat_term(blocked.stack) != "1":
        raise ValueError(f"{variant} U's mask_blocked block is not one matrix")
    hs, hr, hc = nat_term(heads.stack), nat_term(heads.rows), nat_term(heads.cols)
    attn = _block(variant, "attn.products")  # the grid the row sum reads
    as_, ar, ac = nat_term(attn.stack), nat_term(attn.rows), nat_term(attn.cols)
    n_at = _block(variant, "header").offset + HEADER.index("n")
    binders = binders.replace("(R : realFieldType) (expf sqrtf", "(R : realType) (sqrtf")
    binders = binders.replace("(j : 'I_N) (n : nat)", "(j : 'I_N) (n p : nat)")
    on_input += (
        f"  nth 0 x {nat_term(n_at)} = n%:R ->\n"
        f"  encodes x ({_offset_name(variant, 'mask_blocked')} {_SIZES}) 1 {nat_term(blocked.rows)} "
        f"{nat_term(blocked.cols)} (fun _ => \\matrix_(i, j) if blocked M i j then 1 else 0) ->\n"
        f"  (({as_} * {ar} * {ac})%nat <= size x)%nat ->\n"
    )
    if head_query:
        on_input += f"  (p < ({hs} * {hr} * {hc})%nat)%nat -> (p %% {hc})%nat = t -> (p %/ {hc} %/ {hr})%nat = i ->\n"
    return binders, on_input, query


def _ev_real(variant: str, node: str, at: str = "q") -> str:
    """``node`` of ``variant`` evaluated at ``at`` over MathComp-analysis' ``expR``."""
    return _eval(variant, node).replace("eval expf", "eval (@expR R)").replace(" x q", f" x {at}")


def softmax_theorems(variant: str) -> list[tuple[str, str]]:
    """U's softmax over the real exponential ``expR`` (MathComp-analysis): the node ``attn.exp``
    (exp(logit - row max) at an allowed key, else 0) at every query of the attention grid (head t,
    query row i < n, key j) divided by the node ``attn.o.den`` (the row sum of attn.exp over the N
    keys) at every query of the head grid attn.heads on head t, row i, is EncoderLayer's
    ``softmax_rows expR M n (scores P M n Z t) i j`` (the max shift cancels: expRB); and that row
    sum is positive when query i may see some key (EncoderLayer's ``allowed``).  The premises are
    the scores stage's, n at the header's ``n`` and the boolean mask's 0/1 flags at the
    mask_blocked block."""
    binders, on_input, query = _softmax_premises(variant)
    pre = program_name(variant)
    den = _ev_real(variant, pre + "_attn_o_den", "p")
    weight = (
        f"{binders},\n{on_input}{query}\n"
        f"  {_ev_real(variant, pre + '_attn_exp')}\n  / {den}\n"
        f"  = softmax_rows (@expR R) M n (scores P M n {_Z} t) i j"
    )
    no_q = binders.replace(" (q : nat)", "").replace(" (j : 'I_N)", "")
    positive = f"{no_q},\n{on_input}  (i < n)%nat -> (exists j : 'I_N, allowed M n i j) ->\n  0 < {den}"
    return [(f"{pre}_softmax_spec", weight), (f"{pre}_softmax_den_pos", positive)]


def heads_definitions(variant: str) -> list[str]:
    """The offset of the out-projection's block wo in U's layout, as a Coq definition over the sizes."""
    return _offset_definitions(variant, "wo")


def _v_wo_premises(variant: str) -> str:
    """The heads stage's premises beyond the softmax stage's: Wv, bv where U's layout puts them (Wv
    zero beyond d_model rows), Wo at the wo block (zero beyond d_head rows), the grid vw sums."""
    if tuple(a for a, _ in next(ax for name, ax, _ in RECORD if name == "wo")) != ("h", "c", "e"):
        raise ValueError("U's record block wo is not (h, c, e)")
    wo, vwo = _block(variant, "wo"), _block(variant, "vwo.products")
    if (nat_term(wo.stack), nat_term(wo.rows), nat_term(wo.cols)) != ("H", "K", "D"):
        raise ValueError(f"{variant} U's wo block is not H matrices K x D")
    wqkv, bqkv = _offset_name(variant, "wqkv"), _offset_name(variant, "bqkv")
    return (
        f"  encodes x ({wqkv} {_SIZES} + 2 * H * D * K)%nat H D K (Wv P) ->\n"
        f"  encodes x ({bqkv} {_SIZES} + 2 * H * K)%nat 1 H K (fun _ => \\matrix_(t, c) bv P t 0 c) ->\n"
        "  (forall (t : 'I_H) (j : 'I_D) (c : 'I_K), (d_model P <= j)%nat -> Wv P t j c = 0) ->\n"
        f"  encodes x ({_offset_name(variant, 'wo')} {_SIZES}) H K D (Wo P) ->\n"
        "  (forall (t : 'I_H) (c : 'I_K) (e : 'I_D), (d_head P <= c)%nat -> Wo P t c e = 0) ->\n"
        f"  (({nat_term(vwo.stack)} * {nat_term(vwo.rows)} * {nat_term(vwo.cols)})%nat <= size x)%nat ->\n"
    )


def heads_theorems(variant: str) -> list[tuple[str, str]]:
    """U's head output ``attn.o`` (the sum over the keys j of attn.numer_terms = attn.exp times vw,
    vw the sum over c of V.biased times Wo, divided by the row sum attn.o.den) at every query of
    the head grid attn.heads (row i < n, column e, head t): head t's term of EncoderLayer's
    ``self_attn``, ``\\sum_(c < K | c < d_head) head expR P M n Z t i c * Wo P t c e``.  The
    premises are the softmax stage's and the V stage's (Wv, bv where U's layout puts them, Wv zero
    beyond d_model rows), Wo at U's wo block (heads, rows c, columns e), zero beyond d_head rows
    (U's input map pads it so), and the sequence covering the grid vw sums (vwo.products).  No
    premise that query i sees a key: when it sees none, U's 0 / 0 is MathComp's 0, the head's 0."""
    binders, on_input, _ = _softmax_premises(variant)
    pre = program_name(variant)
    heads = _block(variant, "attn.heads")
    binders = binders.replace(" (q : nat)", "").replace(" (j : 'I_N)", "")
    binders = binders.replace("(t : 'I_H) (n p : nat)", "(t : 'I_H) (e : 'I_D) (n p : nat)")
    on_input += _v_wo_premises(variant)
    on_input += f"  (p %/ {nat_term(heads.cols)} %% {nat_term(heads.rows)})%nat = e -> (i < n)%nat ->\n"
    st = (
        f"{binders},\n{on_input}"
        f"  {_ev_real(variant, pre + '_attn_o', 'p')}\n"
        f"  = \\sum_(c < K | (c < d_head P)%nat) head (@expR R) P M n {_Z} t i c * Wo P t c e"
    )
    return [(f"{pre}_head_spec", st)]


def attn_out_definitions(variant: str) -> list[str]:
    """The offset of the out-projection's bias block bo in U's layout, as a Coq definition."""
    return _offset_definitions(variant, "bo")


def attn_out_theorems(variant: str) -> list[tuple[str, str]]:
    """U's R before LayerNorm (node ``out.R``: the sum over the heads h of attn.r_terms, attn.o plus,
    at h = 0, bo and the residual gate times X) at every query of the out grid (row i < n, column
    e < d_model): EncoderLayer's ``add_residual P X (self_attn expR P M n Z) i e``.  The premises are
    the heads stage's (for every head) and the residual gate, bo where U's layout puts it, Wo zero
    beyond nhead heads (U's input map pads it so), a head at all (0 < H) and the sequence covering
    the head grid R sums."""
    binders, on_input = _attn_out_premises(variant)
    pre = program_name(variant)
    st = (
        f"{binders},\n{on_input}"
        f"  {_ev_real(variant, pre + '_out_R', 'p')}\n"
        f"  = add_residual P X (self_attn (@expR R) P M n {_Z}) i e"
    )
    return [(f"{pre}_attn_out_spec", st)]


def _attn_out_premises(variant: str, out_query: bool = True, bounds: bool = True) -> tuple[str, str]:
    """The R stage's binders (row i, column e, n and the out-grid query p) and premises (see
    :func:`attn_out_theorems`); without ``out_query``, row i < n stands for the out-grid query;
    without ``bounds``, no i < n (nor e < d_model): every row and column of the grid."""
    binders, on_input, _ = _softmax_premises(variant, head_query=False)
    out, heads, bo = _block(variant, "out"), _block(variant, "attn.heads"), _block(variant, "bo")
    if (nat_term(bo.stack), nat_term(bo.rows), nat_term(bo.cols)) != ("1", "1", "D"):
        raise ValueError(f"{variant} U's bo block is not one row of D")
    os_, or_, oc = nat_term(out.stack), nat_term(out.rows), nat_term(out.cols)
    hs, hr, hc = nat_term(heads.stack), nat_term(heads.rows), nat_term(heads.cols)
    binders = binders.replace(" (q : nat)", "").replace(" (j : 'I_N)", "").replace(" (t : 'I_H)", "")
    binders = binders.replace("(i : 'I_N) (n p : nat)", "(i : 'I_N) (e : 'I_D) (n p : nat)")
    gates = _offset_name(variant, "gates")
    on_input += _v_wo_premises(variant) + (
        f"  nth 0 x ({gates} {_SIZES} + {GATES.index('residual')})%nat = (if residual P then 1 else 0) ->\n"
        f"  encodes x ({_offset_name(variant, 'bo')} {_SIZES}) 1 1 D (fun _ => bo P) ->\n"
        "  (forall (t : 'I_H) (c : 'I_K) (e : 'I_D), (nhead P <= t)%nat -> Wo P t c e = 0) ->\n"
        f"  (0 < H)%nat -> (({hs} * {hr} * {hc})%nat <= size x)%nat ->\n"
    )
    if not out_query:
        return binders, on_input + ("  (i < n)%nat ->\n" if bounds else "")
    on_input += f"  (p < ({os_} * {or_} * {oc})%nat)%nat -> (p %/ {oc} %% {or_})%nat = i -> (p %% {oc})%nat = e ->\n"
    return binders, on_input + ("  (i < n)%nat -> (e < d_model P)%nat ->\n" if bounds else "")


_X1 = f"(add_residual P X (self_attn (@expR R) P M n {_Z}))"


def _y1_premises(variant: str) -> str:
    """The x1 stage's premises beyond the R stage's: the post gate, Wo and bo zero beyond d_model
    columns, the sequence covering the grid of the square terms."""
    gates = _offset_name(variant, "gates")
    return (
        f"  nth 0 x ({gates} {_SIZES} + {GATES.index('post')})%nat = (if norm P is PostNorm then 1 else 0) ->\n"
        "  (forall (t : 'I_H) (c : 'I_K) (e : 'I_D), (d_model P <= e)%nat -> Wo P t c e = 0) ->\n"
        "  (forall e : 'I_D, (d_model P <= e)%nat -> bo P 0 e = 0) ->\n"
        f"{_fits(variant, 'ln1.square_terms')}"
    )


def y1_theorems(variant: str) -> list[tuple[str, str]]:
    """U's ``out.Y1`` (LayerNorm 1 of R when post-norm, else R; R's mean from out.R_sum, the sum over
    (e, h) of attn.r_terms, over d, its variance from out.R_sq, the sum over (e, h, h2) of
    ln1.square_terms, over d, minus the squared mean) at every query of the out grid (row i < n,
    column e < d_model): EncoderLayer's x1 before the FFN, ``norm1 sqrtf P n X1 i e`` when post-norm,
    else ``X1 i e``, X1 = add_residual P X (self_attn expR P M n Z).  The premises are the R stage's
    and the post gate, Wo and bo zero beyond d_model columns (U's input map pads them so) and the
    sequence covering the grid of the square terms (ln1.square_terms)."""
    binders, on_input = _attn_out_premises(variant)
    pre = program_name(variant)
    on_input += _y1_premises(variant)
    st = (
        f"{binders},\n{on_input}"
        f"  {_ev_real(variant, pre + '_out_Y1', 'p')}\n"
        f"  = (if norm P is PostNorm then norm1 sqrtf P n {_X1} else {_X1}) i e"
    )
    return [(f"{pre}_y1_spec", st)]


@dataclass(frozen=True)
class Stage:
    """A hand-written theory about U's nodes: the theories it requires and its theorems' names and
    statements per variant (generated from U's layout and export)."""

    theory: str
    requires: tuple[Stage, ...]
    theorems: Callable[[str], list[tuple[str, str]]]
    claim: str
    definitions: Callable[[str], list[str]] = lambda variant: []
    reals: bool = False  # the statements name MathComp-analysis' realType and expR
    theorem: bool = False  # U's whole layer (Theorem 6), not a stage of it
    shared: tuple[str, ...] = ()  # definitions of both variants' statements, stated once
    result: str = ""  # the paper result its theorems state whole (beyond Theorem 6), else a stage's
    extra_sizes: tuple[str, ...] = ()  # sizes its statements bind beyond the capacity's (the stack's m)

    @property
    def whole(self) -> bool:
        """Whether its theorems state a paper result whole (Theorem 6, stacks), not a stage of one."""
        return self.theorem or bool(self.result)

    @property
    def sizes(self) -> tuple[str, ...]:
        """The sizes a whole result's statements quantify over (a stage's kernel facts name none)."""
        return (*SIZES, *self.extra_sizes) if self.whole else ()

    def statements(self) -> list[tuple[str, str]]:
        return [t for v in VARIANTS for t in self.theorems(v)]

    @property
    def theorem_names(self) -> list[str]:
        return [name for name, _ in self.statements()]

    @property
    def variants(self) -> list[str]:
        """The variants the stage states theorems about."""
        return [v for v in VARIANTS if self.theorems(v)]

    def closure(self) -> list[Stage]:
        """The stages this one requires, directly or not, each after the ones it requires."""
        out: list[Stage] = []
        for r in self.requires:
            out += [s for s in (*r.closure(), r) if s not in out]
        return out


ROW_MEAN = Stage(
    "UniversalRowMean",
    (),
    row_mean_theorems,
    "U's node ln_x.mean == d_model * EncoderLayer.row_mean",
)
ROW_STATS = Stage(
    "UniversalRowStats",
    (ROW_MEAN,),
    row_stats_theorems,
    "U's LayerNorm-1 centred value == X i j - row_mean and its variance == row_var",
)
LAYER_NORM1 = Stage(
    "UniversalLayerNorm1",
    (ROW_STATS,),
    layer_norm1_theorems,
    "U's LayerNorm-1 value == EncoderLayer's norm1 sqrtf P n X i j (i < n, j < d_model)",
    layer_norm1_definitions,
)
Q_PROJ = Stage(
    "UniversalQProj",
    (LAYER_NORM1,),
    q_proj_theorems,
    "compact U's Q projection (Q.biased) == EncoderLayer's proj P n (Wq P) (bq P) Z t i c, Z = norm1 X "
    "when pre-norm, else X (i < n, c < d_head)",
    q_proj_definitions,
)
K_PROJ = Stage(
    "UniversalKProj",
    (Q_PROJ,),
    k_proj_theorems,
    "compact U's K projection (K.biased) == EncoderLayer's proj P n (Wk P) (bk P) Z t i c at key token i, "
    "Z = norm1 X when pre-norm, else X (i < n, c < d_head)",
)
V_PROJ = Stage(
    "UniversalVProj",
    (K_PROJ,),
    v_proj_theorems,
    "U's V projection (V.biased) == EncoderLayer's proj P n (Wv P) (bv P) Z t i c at value token i, "
    "Z = norm1 X when pre-norm, else X (i < n, c < d_head)",
    v_proj_definitions,
)
SCORES = Stage(
    "UniversalScores",
    (V_PROJ,),
    scores_theorems,
    "U's attention logit (attn.logit: scores times the scale, plus the float mask) == EncoderLayer's "
    "scores P M n Z t i j, Z = norm1 X when pre-norm, else X (i, j < n)",
    scores_definitions,
)
SOFTMAX = Stage(
    "UniversalSoftmax",
    (SCORES,),
    softmax_theorems,
    "U's softmax weight (attn.exp, exp(logit - row max) at an allowed key, over the row sum attn.o.den) "
    "== EncoderLayer's softmax_rows expR M n (scores P M n Z t) i j (i < n), the max shift cancelling, "
    "and the row sum > 0 when query i sees a key",
    softmax_definitions,
    reals=True,
)
HEADS = Stage(
    "UniversalHeads",
    (SOFTMAX,),
    heads_theorems,
    "U's head output (attn.o: the sum over the keys of attn.exp times V W_O over the row sum attn.o.den) "
    "== head t's term of EncoderLayer's self_attn, \\sum_(c < d_head) head expR P M n Z t i c * Wo P t c e "
    "(i < n; Wo zero beyond d_head rows)",
    heads_definitions,
    reals=True,
)
ATTN_OUT = Stage(
    "UniversalAttnOut",
    (HEADS,),
    attn_out_theorems,
    "U's R before LayerNorm (out.R: the sum over the heads of attn.o, plus bo and the residual gate "
    "times X) == EncoderLayer's add_residual P X (self_attn expR P M n Z) i e (i < n, e < d_model; Wo "
    "zero beyond nhead heads)",
    attn_out_definitions,
    reals=True,
)


def ffn_act_definitions(variant: str) -> list[str]:
    """The offsets of the g2, be2, w1 and b1 blocks in U's layout, as Coq definitions over the sizes."""
    return _offset_definitions(variant, "g2", "be2", "w1", "b1")


_Z2 = f"(match norm P with PreNorm => norm2 sqrtf P n {_X1} | PostNorm => norm1 sqrtf P n {_X1} | NoNorm => {_X1} end)"


def ffn_act_theorems(variant: str) -> list[tuple[str, str]]:
    """U's FFN-1 activation ``ffn2.u.act`` at every query of the grid ffn2.products (row i < n,
    column e, feature f): EncoderLayer's ``activation P (\\sum_(j' < D | j' < d_model) Z2 i j' * W1 P
    j' f + b1 P 0 f)``, Z2 the FFN's input (norm2 of X1 when pre-norm, norm1 of X1 when post-norm,
    else X1; X1 = add_residual P X (self_attn expR P M n Z)).  U folds that LayerNorm into sums over
    (h, e') of ffn1.rgw, ffn1.gw and ffn1.bw.  The premises are the x1 stage's (but its out-grid
    query), norm2's weight and bias, W1 (zero beyond d_model rows) and b1 where U's layout puts
    them, the sequence covering the grid ffn1.products, and: ``activation P`` is the function U's
    gelu and gelu_tanh gates select (geluf, gelu_tanhf, else ReLU)."""
    binders, on_input = _attn_out_premises(variant, out_query=False)
    pre = program_name(variant)
    binders = binders.replace("(e : 'I_D) (n p : nat)", "(f : 'I_F) (n q : nat)")
    gs, gr, gc = _shape(variant, "ffn2.products")
    on_input += _y1_premises(variant) + _ffn1_premises(variant)
    on_input += f"  (q < ({gs} * {gr} * {gc})%nat)%nat -> (q %/ {gc} %/ {gr})%nat = i -> (q %% {gc})%nat = f ->\n"
    st = (
        f"{binders},\n{on_input}"
        f"  {_ev_real(variant, pre + '_ffn2_u_act', 'q')}\n"
        f"  = activation P (\\sum_(j' < D | (j' < d_model P)%nat) {_Z2} i j' * W1 P j' f + b1 P 0 f)"
    )
    return [(f"{pre}_ffn_act_spec", st)]


def _ffn1_premises(variant: str) -> str:
    """The FFN-1 stage's premises beyond the x1 stage's: norm2's weight and bias, W1 (zero beyond
    d_model rows) and b1 where U's layout puts them, the sequence covering ffn1.products, and
    ``activation P`` the function U's gelu and gelu_tanh gates select."""
    shapes = {"g2": ("1", "1", "D"), "be2": ("1", "1", "D"), "w1": ("1", "D", "F"), "b1": ("1", "1", "F")}
    for b, shape in shapes.items():
        if _shape(variant, b) != shape:
            raise ValueError(f"{variant} U's {b} block is not {shape}")
    _check_operands({"g2": "norm2_weight", "be2": "norm2_bias", "w1": "linear1_weight", "b1": "linear1_bias"})
    gates = _offset_name(variant, "gates")
    return (
        f"  encodes x ({_offset_name(variant, 'g2')} {_SIZES}) 1 1 D (fun _ => norm2_w P) ->\n"
        f"  encodes x ({_offset_name(variant, 'be2')} {_SIZES}) 1 1 D (fun _ => norm2_b P) ->\n"
        f"  encodes x ({_offset_name(variant, 'w1')} {_SIZES}) 1 D F (fun _ => W1 P) ->\n"
        f"  encodes x ({_offset_name(variant, 'b1')} {_SIZES}) 1 1 F (fun _ => b1 P) ->\n"
        "  (forall (j : 'I_D) (f : 'I_F), (d_model P <= j)%nat -> W1 P j f = 0) ->\n"
        f"{_fits(variant, 'ffn1.products')}"
        f"  (forall v : R, activation P v = if nth 0 x ({gates} {_SIZES} + {GATES.index('gelu')})%nat != 0\n"
        "    then geluf v"
        f" else if nth 0 x ({gates} {_SIZES} + {GATES.index('gelu_tanh')})%nat != 0 then gelu_tanhf v"
        " else Num.max v 0) ->\n"
    )


Y1 = Stage(
    "UniversalY1",
    (ATTN_OUT,),
    y1_theorems,
    "U's x1 (out.Y1: LayerNorm 1 of R when post-norm, its mean and variance from the sums out.R_sum "
    "and out.R_sq of U's square terms, else R) == EncoderLayer's norm1 sqrtf P n X1 i e when post-norm, "
    "else X1 i e, X1 = add_residual P X (self_attn expR P M n Z) (i < n, e < d_model; Wo and bo zero "
    "beyond d_model columns)",
    reals=True,
)


# EncoderLayer's x1 (the FFN's residual input) and X2 (x1 plus the FFN, before LayerNorm 2)
_x1 = f"(if norm P is PostNorm then norm1 sqrtf P n {_X1} else {_X1})"
_X2 = f"(add_residual P {_x1} (ff_block P n {_Z2}))"


def ffn_out_definitions(variant: str) -> list[str]:
    """The offsets of the w2 and b2 blocks in U's layout, as Coq definitions over the sizes."""
    return _offset_definitions(variant, "w2", "b2")


def ffn_out_theorems(variant: str) -> list[tuple[str, str]]:
    """U's ``out.R2`` (c2 = the residual gate times out.Y1 plus b2, plus out.ffn, the sum over f of
    ffn2.prod = ffn2.u.act times W2) at every query of the out grid (row i < n, column e < d_model):
    EncoderLayer's ``add_residual P x1 (ff_block P n Z2) i e``, x1 = norm1 X1 when post-norm, else X1,
    Z2 the FFN's input (see :func:`ffn_act_theorems`).  The premises are the x1 stage's, the FFN-1
    stage's (but its query), W2 (F x D, zero beyond dim_ff rows) and b2 where U's layout puts them
    and the sequence covering the grid ffn2.products."""
    binders, on_input = _attn_out_premises(variant)
    pre = program_name(variant)
    on_input += _y1_premises(variant) + _ffn1_premises(variant) + _ffn2_premises(variant)
    st = f"{binders},\n{on_input}  {_ev_real(variant, pre + '_out_R2', 'p')}\n"
    st += f"  = {_X2[1:-1]} i e"
    return [(f"{pre}_ffn_out_spec", st)]


def _w2_premise(variant: str) -> str:
    """W2 (F x D) where U's layout puts it."""
    if _shape(variant, "w2") != ("1", "F", "D"):
        raise ValueError(f"{variant} U's w2 block is not one F x D matrix")
    _check_operands({"w2": "linear2_weight"})
    return f"  encodes x ({_offset_name(variant, 'w2')} {_SIZES}) 1 F D (fun _ => W2 P) ->\n"


def _ffn2_premises(variant: str) -> str:
    """The FFN-2 stage's premises beyond the FFN-1 stage's: W2 (F x D, zero beyond dim_ff rows) and
    b2 where U's layout puts them, the sequence covering the grid ffn2.products."""
    if _shape(variant, "b2") != ("1", "1", "D"):
        raise ValueError(f"{variant} U's b2 block is not one row of D")
    _check_operands({"b2": "linear2_bias"})
    return (
        _w2_premise(variant)
        + f"  encodes x ({_offset_name(variant, 'b2')} {_SIZES}) 1 1 D (fun _ => b2 P) ->\n"
        "  (forall (f : 'I_F) (e : 'I_D), (dim_ff P <= f)%nat -> W2 P f e = 0) ->\n"
        f"{_fits(variant, 'ffn2.products')}"
    )


FFN_ACT = Stage(
    "UniversalFfnAct",
    (Y1,),
    ffn_act_theorems,
    "U's FFN-1 activation (ffn2.u.act: LayerNorm folded into sums of ffn1.rgw, ffn1.gw, ffn1.bw over "
    "(h, e'), plus b1, through the gates' activation) == EncoderLayer's activation P (sum_(j' < d_model) "
    "Z2 i j' * W1 P j' f + b1 P 0 f), Z2 = norm2 X1 (pre-norm), norm1 X1 (post-norm), else X1 (i < n; "
    "activation P the function U's gelu / gelu_tanh gates select; W1 zero beyond d_model rows)",
    ffn_act_definitions,
    reals=True,
)
FFN_OUT = Stage(
    "UniversalFfnOut",
    (FFN_ACT,),
    ffn_out_theorems,
    "U's R2 (out.R2: the residual gate times out.Y1 plus b2, plus out.ffn, the sum over f of ffn2.u.act "
    "times W2) == EncoderLayer's add_residual P x1 (ff_block P n Z2) i e, x1 = norm1 X1 when post-norm, "
    "else X1 (i < n, e < d_model; W2 zero beyond dim_ff rows, the FFN-1 stage's premises)",
    ffn_out_definitions,
    reals=True,
)


def _gram_query(variant: str, at: str = "q") -> str:
    """The premises on the query ``at`` of the grid ln2.gram_terms (row i, features f, f2)."""
    gs, gr, gc = _shape(variant, "ln2.gram_terms")
    if (gs, gr, gc) != ("N", "F", "F"):
        raise ValueError(f"{variant} U's ln2.gram_terms grid is not (i, f, f2) over N, F, F")
    return (
        f"  ({at} < ({gs} * {gr} * {gc})%nat)%nat -> ({at} %/ {gc} %/ {gr})%nat = i ->\n"
        f"  ({at} %/ {gc} %% {gr})%nat = f -> ({at} %% {gc})%nat = f2 ->\n"
    )


def gram_act_theorems(variant: str) -> list[tuple[str, str]]:
    """On the grid ln2.gram_terms (row i < n, features f, f2), U's FFN-1 activations ``gram.u.act``
    (at f) and ``gram.u2.act`` (at f2), R's statistics recomputed on this grid (``gram1.*``): each
    EncoderLayer's ``activation P (\\sum_(j' < D | j' < d_model) Z2 i j' * W1 P j' f + b1 P 0 f)`` as in
    :func:`ffn_act_theorems` (its premises, the query on this grid); and U's Gram entry ``gram`` (the
    sum over e of gram.prod = W2[f, e] W2[f2, e] over the grid gram.products) is ``\\sum_(e < D) W2
    P f e * W2 P f2 e``, over all D columns (no premise on W2: LayerNorm 2's stage restricts it)."""
    binders, on_input = _attn_out_premises(variant, out_query=False)
    pre = program_name(variant)
    binders = binders.replace("(e : 'I_D) (n p : nat)", "(f f2 : 'I_F) (n q : nat)")
    on_input += _y1_premises(variant) + _ffn1_premises(variant) + _gram_query(variant)
    act = "activation P (\\sum_(j' < D | (j' < d_model P)%nat) {z} i j' * W1 P j' {f} + b1 P 0 {f})"
    out = []
    for node, f, name in (("gram_u_act", "f", "gram_act_spec"), ("gram_u2_act", "f2", "gram_act2_spec")):
        st = f"{binders},\n{on_input}  {_ev_real(variant, f'{pre}_{node}', 'q')}\n  = {act.format(z=_Z2, f=f)}"
        out.append((f"{pre}_{name}", st))
    gram = (
        f"  forall (R : realType) (sqrtf geluf gelu_tanhf : R -> R) ({_SIZES} : nat)\n"
        "    (P : params R D H K F) (x : seq R) (i : 'I_N) (f f2 : 'I_F) (q : nat),\n"
        f"{_w2_premise(variant)}{_fits(variant, 'gram.products')}{_gram_query(variant)}"
        f"  {_ev_real(variant, pre + '_gram', 'q')}\n  = \\sum_(e < D) W2 P f e * W2 P f2 e"
    )
    return [*out, (f"{pre}_gram_spec", gram)]


GRAM_ACT = Stage(
    "UniversalGramAct",
    (FFN_OUT,),
    gram_act_theorems,
    "U's FFN-1 activations on the Gram grid (gram.u.act at f, gram.u2.act at f2, R's statistics "
    "recomputed there) == EncoderLayer's activation P (sum_(j' < d_model) Z2 i j' * W1 P j' f + b1 P 0 f), "
    "and U's Gram entry (gram: the sum over e of W2[f, e] W2[f2, e]) == sum_(e < D) W2 P f e * W2 P f2 e "
    "(i < n; the FFN-1 stage's premises)",
    reals=True,
)


def _y2_premises(variant: str) -> str:
    """The LayerNorm-2 stage's premises beyond the R2 stage's: U's sums over every column e < D are
    the layer's over d_model when R2 is zero beyond d_model columns, so norm1's weight and bias (x1
    when post-norm), b2 and W2 are zero beyond d_model columns (U's input map pads them so); a
    feature at all (0 < F: at F = 0 U's sums over (e, f) are empty, its mean 0, while R2 is x1
    plus b2); the sequence covers the grids gram.products and ln2.gram_terms."""
    return (
        "  (forall e : 'I_D, (d_model P <= e)%nat -> norm1_w P 0 e = 0) ->\n"
        "  (forall e : 'I_D, (d_model P <= e)%nat -> norm1_b P 0 e = 0) ->\n"
        "  (forall e : 'I_D, (d_model P <= e)%nat -> b2 P 0 e = 0) ->\n"
        "  (forall (f : 'I_F) (e : 'I_D), (d_model P <= e)%nat -> W2 P f e = 0) ->\n"
        f"  (0 < F)%nat ->\n{_fits(variant, 'gram.products')}{_fits(variant, 'ln2.gram_terms')}"
    )


def y2_theorems(variant: str) -> list[tuple[str, str]]:
    """U's ``out.Y2`` (LayerNorm 2 of R2 when post-norm, else R2) at every query of the out grid (row
    i < n, column e < d_model): EncoderLayer's ``norm2 sqrtf P n X2 i e`` when post-norm, else ``X2
    i e``, X2 = add_residual P x1 (ff_block P n Z2) (see :func:`ffn_out_theorems`).  R2's mean is
    out.R2_sum (the sum over (e, f) of ln2.sum_terms) over d, its second moment (out.R2_sq +
    out.R2_gram) over d: the sum over (e, f) of ln2.sq_terms plus the sum over (f, f2) of
    ln2.gram_terms (act_f act_f2 gram[f, f2], the Gram identity).  The premises are the R2 stage's
    and :func:`_y2_premises`."""
    binders, on_input = _attn_out_premises(variant)
    pre = program_name(variant)
    on_input += _y1_premises(variant) + _ffn1_premises(variant) + _ffn2_premises(variant) + _y2_premises(variant)
    st = f"{binders},\n{on_input}  {_ev_real(variant, pre + '_out_Y2', 'p')}\n"
    st += f"  = (if norm P is PostNorm then norm2 sqrtf P n {_X2} else {_X2}) i e"
    return [(f"{pre}_y2_spec", st)]


Y2 = Stage(
    "UniversalY2",
    (GRAM_ACT,),
    y2_theorems,
    "U's output before the write (out.Y2: LayerNorm 2 of R2 when post-norm, its mean from out.R2_sum, its "
    "second moment from out.R2_sq + out.R2_gram, else R2) == EncoderLayer's norm2 sqrtf P n X2 i e when "
    "post-norm, else X2 i e, X2 = add_residual P x1 (ff_block P n Z2) (i < n, e < d_model; norm1's weight "
    "and bias, b2 and W2 zero beyond d_model columns)",
    reals=True,
)


def _layer_premises(variant: str, out_query: bool = True) -> tuple[str, str]:
    """The whole layer's binders and premises: FFN_OUT's without i < n and e < d_model (every query
    of the out grid; without ``out_query``, no query p: X's entry (i, e)), and the ffn gate where
    U's layout puts it."""
    X, out = _block(variant, "X"), _block(variant, "out")
    if (nat_term(out.stack), nat_term(out.rows), nat_term(out.cols)) != ("1", nat_term(X.rows), nat_term(X.cols)):
        raise ValueError(f"{variant} U's out grid is not X's positions (row-major, one matrix)")
    binders, on_input = _attn_out_premises(variant, out_query, bounds=False)
    if not out_query:
        binders = binders.replace("(n p : nat)", "(n : nat)")
    gates = _offset_name(variant, "gates")
    on_input += _y1_premises(variant) + _ffn1_premises(variant) + _ffn2_premises(variant)
    on_input += f"  nth 0 x ({gates} {_SIZES} + {GATES.index('ffn')})%nat = (if has_ffn P then 1 else 0) ->\n"
    return binders, on_input


_LAYER = "encoder_layer (@expR R) sqrtf P M n X"


def _layer_conclusions(variant: str) -> tuple[str, str]:
    """The whole layer's two conclusions: node ``Y`` at the out-grid query p, and U's program (node
    ``U``) at the position where the encoding puts X's entry (i, e), each ``encoder_layer ... i e``."""
    pre, X = program_name(variant), _block(variant, "X")
    where = f"(pos {nat_term(X.offset)} {nat_term(X.rows)} {nat_term(X.cols)} 0 i e)"
    y = f"  {_ev_real(variant, pre + '_Y', 'p')}\n  = {_LAYER} i e"
    return y, f"  {_ev_real(variant, pre, where)}\n  = {_LAYER} i e"


def layer_theorems(variant: str) -> list[tuple[str, str]]:
    """U's output ``Y`` (where(ffn gate, out.Y2, out.Y1) times the masks mask.rows, i < n read at the
    header's n, and mask.cols, e < d read at the header's d) at every query of the out grid (every
    row i < N, column e < D): EncoderLayer's ``encoder_layer expR sqrtf P M n X i e``, for every
    layer but post-norm with an FFN (``norm P = PostNorm -> ~~ has_ffn P``: that one needs LayerNorm
    2, out.Y2 = norm2 of X2); and the same for every layer given out.Y2's equation at the query
    (when the layer has an FFN, i < n and e < d_model: out.Y2 is ``norm2 sqrtf P n X2 i e`` when
    post-norm, else ``X2 i e``, X2 = add_residual P x1 (ff_block P n Z2), FFN_OUT's right-hand
    side); and U's program (node ``U``: Y over X) at the position where the encoding puts X's entry
    (i, e) (``pos`` of X's block) is ``encoder_layer ... i e``, every layer but post-norm with an
    FFN.  The premises are FFN_OUT's (but i < n and e < d_model) and the ffn gate."""
    binders, on_input = _layer_premises(variant)
    no_p, at_x = _layer_premises(variant, out_query=False)
    pre = program_name(variant)
    covered = "  (norm P = PostNorm -> ~~ has_ffn P) ->\n"
    y, u = _layer_conclusions(variant)
    y2 = (
        "  (has_ffn P -> (i < n)%nat -> (e < d_model P)%nat ->\n"
        f"    {_ev_real(variant, pre + '_out_Y2', 'p')}\n"
        f"    = (if norm P is PostNorm then norm2 sqrtf P n {_X2} else {_X2}) i e) ->\n"
    )
    return [
        (f"{pre}_layer_spec", f"{binders},\n{on_input}{covered}{y}"),
        (f"{pre}_layer_of_y2", f"{binders},\n{on_input}{y2}{y}"),
        (f"{pre}_layer_out_spec", f"{no_p},\n{at_x}{covered}{u}"),
    ]


LAYER = Stage(
    "UniversalLayer",
    (FFN_OUT,),
    layer_theorems,
    "U's output (Y: where(ffn gate, out.Y2, out.Y1) times the row mask i < n and the column mask "
    "e < d) == EncoderLayer's encoder_layer expR sqrtf P M n X i e at every query of the out grid "
    "(every i < N, e < D: 0 outside n x d_model on both sides), for every layer except post-norm with "
    "an FFN (not covered: it needs LayerNorm 2); for every layer given out.Y2 == norm2 X2 (post-norm) "
    "or X2; and node U (Y over X) at X's entry (i, e) == encoder_layer ... i e (the ffn gate, n and d "
    "where U's layout puts them)",
    reals=True,
)


def theorem6_theorems(variant: str) -> list[tuple[str, str]]:
    """Theorem 6 for one layer, every norm placement, with or without an FFN: U's output ``Y`` at every
    query of the out grid (every row i < N, column e < D) is EncoderLayer's ``encoder_layer expR
    sqrtf P M n X i e`` (:func:`layer_theorems`' ``layer_of_y2`` with the LayerNorm-2 theorem of
    :func:`y2_theorems`), and U's program (node ``U``) at the position where the encoding puts X's
    entry (i, e) is the same.  The premises are the two stages': FFN_OUT's (but i < n and e <
    d_model), the ffn gate and :func:`_y2_premises` (norm1's weight and bias, b2 and W2 zero beyond
    d_model columns, 0 < F, the Gram grids inside x)."""
    binders, on_input = _layer_premises(variant)
    no_p, at_x = _layer_premises(variant, out_query=False)
    pre = program_name(variant)
    y, u = _layer_conclusions(variant)
    y2 = _y2_premises(variant)
    return [
        (f"{pre}_theorem6", f"{binders},\n{on_input}{y2}{y}"),
        (f"{pre}_theorem6_out", f"{no_p},\n{at_x}{y2}{u}"),
    ]


THEOREM6 = Stage(
    "UniversalTheorem6",
    (Y2, LAYER),
    theorem6_theorems,
    "U's whole layer: U's output (Y) == EncoderLayer's encoder_layer expR sqrtf P M n X i e at every query "
    "of the out grid (every i < N, e < D), and U's program (node U) at X's entry (i, e) == encoder_layer "
    "... i e, for every layer: pre-norm, post-norm or no norm, with or without an FFN and residual "
    "connections, any scale, masks and activation U's gates select, H heads (Theorem 9), for every "
    "capacity N, D, H, K, F with 0 < H and 0 < F (the premises: each block of <T, X> where U's layout "
    "puts it, X and T's weights zero beyond their true sizes)",
    reals=True,
    theorem=True,
)


ENCODER_STACK = (
    "Fixpoint encoder_stack (R : realType) (sqrtf : R -> R) (N D H K F : nat) (Ps : nat -> params R D H K F)\n"
    "  (M : mask R N) (n m : nat) (X : 'M[R]_(N, D)) {struct m} : 'M[R]_(N, D) :=\n"
    "  if m is m'.+1 then encoder_layer (@expR R) sqrtf (Ps m') M n (encoder_stack R sqrtf N D H K F Ps M n m' X)\n"
    "  else X."
)
_X_PAD = "  (forall (i : 'I_N) (j : 'I_D), (d_model P <= j)%nat -> X i j = 0) ->\n"


def _one_layer_premises(variant: str) -> tuple[str, str, str]:
    """Theorem 6's premises at X's entries (``U_<v>_theorem6_out``) split in two: the two on X (its
    block in the encoding, zero beyond d_model columns) and the rest, none of which names X."""
    _, at_x = _layer_premises(variant, out_query=False)
    rest = at_x + _y2_premises(variant)
    _, on_x, _ = _premises(variant)
    for line in (on_x, _X_PAD):
        if rest.count(line) != 1:
            raise ValueError(f"{variant} U's Theorem 6 premises hold {rest.count(line)} copies of {line.strip()!r}")
        rest = rest.replace(line, "")
    if re.search(r"\bX\b", rest):
        raise ValueError(f"{variant} U's Theorem 6 premises name X beyond its two premises")
    return on_x, _X_PAD, rest


def stack_definitions(variant: str) -> list[str]:
    """The loop of the stack theorem (:func:`stack_theorems`): where the record queue starts and ends
    in U's input map, one pass of U over a whole sequence, the sequence seen t records on, and
    Theorem 6's premises on one layer's record as a proposition."""
    pre, umap = program_name(variant), UniversalSimulator.over_symbolic_capacity(variant).map
    size_args = " ".join(f"(Z.of_nat {s})" for s in SIZES)
    _, _, rest = _one_layer_premises(variant)
    return [
        f"Definition {pre}_record_base ({_SIZES} : nat) : nat :=\n  {nat_term(umap.base)}.",
        f"Definition {pre}_record_end ({_SIZES} : nat) : nat :=\n  {nat_term(umap.record[-1].end_expr())}.",
        f"Definition {pre}_record_size ({_SIZES} : nat) : nat :=\n"
        f"  ({pre}_record_end {_SIZES} - {pre}_record_base {_SIZES})%nat.",
        f"Definition {pre}_pass (R : realType) (sqrtf geluf gelu_tanhf : R -> R) ({_SIZES} : nat) (x : seq R)\n"
        f"  : seq R := mkseq (eval (@expR R) sqrtf geluf gelu_tanhf ({pre} {size_args}) x) (size x).",
        f"Definition {pre}_view (R : realType) ({_SIZES} : nat) (x : seq R) (t : nat) : seq R :=\n"
        f"  mkseq (fun q => nth 0 x (if (q < {pre}_record_base {_SIZES})%nat then q\n"
        f"    else (q + t * {pre}_record_size {_SIZES})%nat)) (size x).",
        f"Definition {pre}_layer_premises (R : realType) (sqrtf geluf gelu_tanhf : R -> R) ({_SIZES} : nat)\n"
        f"  (P : params R D H K F) (M : mask R N) (n : nat) (x : seq R) : Prop :=\n"
        f"  forall G : Prop, (\n{rest}  G) -> G.",
    ]


def stack_theorems(variant: str) -> list[tuple[str, str]]:
    """Stacks by looping: U's pass iterated m times over <T_0 .. T_(m-1), X> (the records of layers
    ``Ps 0 .. Ps (m - 1)`` queued from the record base, one every ``record_size`` positions; the
    header and masks once) holds at X's entry (i, e) EncoderLayer's m-layer encoder
    ``encoder_stack`` (:data:`ENCODER_STACK`, layer ``Ps t`` applied t-th).  The premises: X's two
    (on layer 0's d_model) and, for each t < m, Theorem 6's others on the sequence seen t records on
    (``<v>_view x t``: the header and masks as they are, the record slot holding record t)."""
    pre = program_name(variant)
    on_x, pad, _ = _one_layer_premises(variant)
    binders = (
        f"  forall (R : realType) (sqrtf geluf gelu_tanhf : R -> R) ({_SIZES} : nat)\n"
        "    (Ps : nat -> params R D H K F) (M : mask R N) (X : 'M[R]_(N, D)) (x : seq R) (n m : nat)"
        " (i : 'I_N) (e : 'I_D)"
    )
    X = _block(variant, "X")
    where = f"(pos {nat_term(X.offset)} {nat_term(X.rows)} {nat_term(X.cols)} 0 i e)"
    st = (
        f"{binders},\n{on_x}{pad.replace('d_model P', 'd_model (Ps 0)')}"
        f"  (forall t : nat, (t < m)%nat ->\n"
        f"    {pre}_layer_premises R sqrtf geluf gelu_tanhf {_SIZES} (Ps t) M n ({pre}_view R {_SIZES} x t)) ->\n"
        f"  nth 0 (ssrnat.iter m ({pre}_pass R sqrtf geluf gelu_tanhf {_SIZES}) x) {where}\n"
        f"  = encoder_stack R sqrtf {_SIZES} Ps M n m X i e"
    )
    return [(f"{pre}_stack", st)]


STACK = Stage(
    "UniversalStack",
    (THEOREM6,),
    stack_theorems,
    "stacks by looping: U's pass iterated m times over the records of layers Ps 0 .. Ps (m - 1) and X holds "
    "EncoderLayer's m-layer encoder at X's entries, for every m, every capacity N, D, H, K, F (0 < H, 0 < F) "
    "and every layer of each record (the premises: Theorem 6's for each record seen in the slot a pass reads)",
    stack_definitions,
    reals=True,
    shared=(ENCODER_STACK,),
    result="stacks (depth by looping)",
    extra_sizes=("m",),
)


STAGES: tuple[Stage, ...] = (
    ROW_MEAN,
    ROW_STATS,
    LAYER_NORM1,
    Q_PROJ,
    K_PROJ,
    V_PROJ,
    SCORES,
    SOFTMAX,
    HEADS,
    ATTN_OUT,
    Y1,
    FFN_ACT,
    FFN_OUT,
    GRAM_ACT,
    Y2,
    LAYER,
    THEOREM6,
    STACK,
)


def theorem_name(variant: str) -> str:
    """The row-mean theorem of ``variant``: ``U_<variant>_ln_x_mean_spec``."""
    return f"{program_name(variant)}_ln_x_mean_spec"


def statement(variant: str) -> str:
    """The row-mean theorem's statement for ``variant`` (see :func:`row_mean_theorems`)."""
    return row_mean_theorems(variant)[0][1]


def nodes_library(stage: Stage) -> str:
    """The library of U's nodes ``stage`` reads and no earlier stage of the build does: ``<Theory>Nodes``."""
    return f"{stage.theory}Nodes"


def _preamble(stage: Stage, own: bool) -> str:
    """The generated files' imports: the semantics, the layer, the nodes library of ``stage`` (which
    exports the earlier ones) and the statements of the stages it requires (and its own when
    ``own``); MathComp-analysis' reals and exp when one of those stages names them."""
    stages = [*stage.closure(), stage] if own else stage.closure()
    names = ["Semantics", "EncoderLayer", nodes_library(stage), *(f"{s.theory}Statement" for s in stages)]
    analysis = "From mathcomp Require Import reals sequences exp.\n" if any(s.reals for s in (*stages, stage)) else ""
    return (
        "From mathcomp Require Import all_ssreflect all_algebra.\n"
        f"{analysis}"
        "From Coq Require Import ZArith.\n"
        f"From Attnsim Require Import {' '.join(names)}.\n"
        "Import GRing.Theory Num.Theory.\nLocal Open Scope ring_scope.\n"
    )


def statement_text(stage: Stage = ROW_MEAN) -> str:
    """``<Theory>Statement.v``: the stage's definitions and each theorem's statement as a ``Prop``."""
    shared = "".join(d + "\n" for d in stage.shared)
    offsets = shared + "".join(d + "\n" for v in VARIANTS for d in stage.definitions(v))
    defs = offsets + "\n".join(f"Definition {name}_statement : Prop :=\n{st}.\n" for name, st in stage.statements())
    head = "(* Generated by attnsim.universal.kernel_stages from U's layout. *)\n"
    return head + _preamble(stage, own=False) + "\n" + defs


def _chain(stage: Stage) -> list[Stage]:
    """The stages whose node libraries a build of ``stage`` holds: :data:`STAGES` up to the last one
    ``stage`` requires, then ``stage`` (a chain: each library exports the one before)."""
    wanted = [*stage.closure(), stage]
    last = max((i for i, s in enumerate(STAGES) if s in wanted), default=-1)
    chain = list(STAGES[: last + 1])
    return chain if stage in chain else [*chain, stage]


def node_libraries(programs: Mapping[str, CoqProgram] | None = None, stage: Stage = ROW_MEAN) -> list[B.CoqFile]:
    """U's export (or ``programs``: variant -> export) cut into the node libraries of
    :func:`_chain`: each stage's library holds the nodes its statements reach that no earlier one
    holds (:func:`attnsim.universal.kernel_nodes.partition`), so a changed node recompiles only the
    libraries and stages from the first that reads it on."""
    chain = _chain(stage)
    given = programs or {}
    parts: dict[str, list[str]] = {}
    for v in VARIANTS:
        text, pre = (given.get(v) or export_universal(v)).text, program_name(v)
        defined = KN.nodes(text, pre).keys()
        wanted = [
            KN.names_in("\n".join([*(st for _, st in s.theorems(v)), *s.definitions(v)]), pre) & defined for s in chain
        ]
        parts[v] = KN.partition(text, pre, wanted)
    out: list[B.CoqFile] = []
    for k, s in enumerate(chain):
        prev = f"From Attnsim Require Export {nodes_library(chain[k - 1])}.\n" if k else ""
        text = module_text([]) + prev + "\n" + "".join(parts[v][k] for v in VARIANTS)
        deps = ("Semantics", nodes_library(chain[k - 1])) if k else ("Semantics",)
        out.append(B.CoqFile(nodes_library(s), text, deps))
    return out


def files(programs: Mapping[str, CoqProgram] | None = None, stage: Stage = ROW_MEAN) -> list[B.CoqFile]:
    """The build of ``stage`` (see the module doc); ``programs`` (variant -> export) replaces U's own."""
    src = coq_sources()
    out = [
        B.CoqFile("Semantics", (src / "Semantics.v").read_text()),
        B.CoqFile("Lemmas", (src / "Lemmas.v").read_text(), ("Semantics",)),
        B.CoqFile("EncoderLayer", (src / "EncoderLayer.v").read_text()),
        B.CoqFile("UniversalLemmas", (src / "UniversalLemmas.v").read_text(), ("Semantics", "Lemmas")),
        *node_libraries(programs, stage),
    ]
    base = ("Semantics", "Lemmas", "UniversalLemmas", "EncoderLayer")
    done: list[str] = []  # the files of the stages built so far: each stage may require them
    for s in (*stage.closure(), stage):
        stmt = f"{s.theory}Statement"
        stmts = tuple(f"{r.theory}Statement" for r in s.closure())
        out.append(B.CoqFile(stmt, statement_text(s), ("Semantics", "EncoderLayer", nodes_library(s), *stmts)))
        out.append(B.CoqFile(s.theory, (src / f"{s.theory}.v").read_text(), (*base, nodes_library(s), *done, stmt)))
        done += [stmt, s.theory]
    gate = G.gate_text(_preamble(stage, own=True), stage.theory, stage.theorem_names)
    out.append(B.CoqFile(f"{stage.theory}Gate", gate, ("Semantics", "EncoderLayer", nodes_library(stage), *done)))
    return out


def source_problems(stage: Stage = ROW_MEAN) -> list[str]:
    """A changed ``Semantics.v`` or ``EncoderLayer.v`` (their digests are pinned; EncoderLayer.v's beside
    its Python transcription) or a forbidden command in a hand-written file."""
    src = coq_sources()
    out = []
    sem = hashlib.sha256((src / "Semantics.v").read_bytes()).hexdigest()
    if sem != SEMANTICS_SHA256:
        pinned = SEMANTICS_SHA256[:12]
        out.append(f"Semantics.v is not the reviewed semantics (SHA-256 {sem[:12]}..., pinned {pinned}...)")
    enc = hashlib.sha256((src / "EncoderLayer.v").read_bytes()).hexdigest()
    if enc != ENCODER_LAYER_SHA256:
        out.append(
            f"EncoderLayer.v is not the one its Python transcription was reviewed against (SHA-256 "
            f"{enc[:12]}..., pinned {ENCODER_LAYER_SHA256[:12]}... in attnsim/proofs/coq_encoder_layer.py)"
        )
    for name in (*HAND_WRITTEN[1:], *(s.theory for s in stage.closure()), stage.theory):
        found = sorted({m.group(0) for m in FORBIDDEN.finditer((src / f"{name}.v").read_text())})
        if found:
            out.append(f"{name}.v uses {', '.join(found)} (code, files or a kernel check turned off: refused)")
    return out


def check(programs: Mapping[str, CoqProgram] | None = None, stage: Stage = ROW_MEAN) -> Callable[[float], Outcome]:  # noqa: C901
    """The obligation's check: U's exports (or ``programs``) against the stage's theory."""

    def run(timeout: float) -> Outcome:  # noqa: C901
        _ = timeout  # coqc and coqchk run on their own CPU budget (COQ_BUDGET)
        tools = B.CoqTools.find()
        if tools is None:
            return Outcome.unknown("not run (coqc not installed)")
        problems = source_problems(stage)
        if problems:
            return Outcome.bad("; ".join(problems))
        try:
            fs = files(programs, stage)
        except ValueError as exc:  # a node or block the statement names is not in U
            return Outcome.bad(f"{stage.theory}: {exc}")
        built = B.build(fs, tools, COQ_BUDGET)
        failed = built.failed
        if failed is not None:
            if failed.status == "over budget":
                return Outcome.unknown(f"coqc stopped on {failed.name}.v: {failed.output.strip()[-200:]}")
            gate_failed = failed.name.endswith("Gate")
            what = "the theorems' types are not their generated statements" if gate_failed else "Coq rejects it"
            return Outcome.bad(f"{failed.name}.v: {what}: {first_error(failed.output)}")
        checked = B.check(fs, built, tools, COQ_BUDGET)
        if checked.status == "over budget":
            return Outcome.unknown(f"coqchk stopped: {checked.output.strip()[-200:]}")
        if checked.status != "ok":
            return Outcome.bad(f"coqchk rejects the libraries: {first_error(checked.output)}")
        own = G.own_axioms(checked)
        if own:
            return Outcome.bad(f"assumptions in our own Coq files: {', '.join(own)}")
        if checked.unsafe:
            return Outcome.bad(f"coqchk reports unsafe definitions: {', '.join(checked.unsafe)}")
        names = stage.theorem_names
        texts = G.split_gate_output(built.result(f"{stage.theory}Gate").output, names)
        missing = G.Assumptions("", (), ("Print Assumptions printed nothing between its markers",))
        found = [
            G.resolve(t, G.parse_assumptions(texts[t]), checked.axioms) if t in texts else replace(missing, theorem=t)
            for t in names
        ]
        refused = [f"{a.theorem}: {r}" for a in found for r in a.refused]
        if refused:
            return Outcome.bad(f"assumptions outside the allowed set: {'; '.join(refused)}")
        per = "; ".join(f"{a.theorem}: {', '.join(a.full) or 'none (closed under the global context)'}" for a in found)
        every = tuple(sorted({f for a in found for f in a.full}))
        kind = "Theorem 6" if stage.theorem else stage.result or "one stage of Theorem 6, not the whole layer"
        detail = (
            f"Coq accepts {stage.theory}.v, statements as generated from U's layout, coqchk re-checks it: "
            f"{stage.claim} ({kind}), "
            f"{' and '.join(stage.variants)} U, "
            "every capacity; "
            f"assumptions by full path: {per}"
        )
        return Outcome(True, detail, kernel=KernelFacts(tuple(names), every, stage.whole, stage.sizes))

    return run


_H_FREE = re.compile(r"\(N D H K F : nat\)")
_H_FIXED = re.compile(r"\bH\s*(?:=|<=|<)\s*\d|\d\s*(?:=|<=)\s*H\b")
THEOREM6_BUDGET = 300.0  # the worker's own CPU seconds (coqc runs apart): the largest, so it starts first
THEOREM6_ID = f"{THEOREM_CONSTRUCTION}/kernel/{THEOREM6.theory}"  # Theorem 6's kernel row
STACK_CONSTRUCTION = "simulator-frame"  # the stacks' construction (attnsim.universal.obligations.FRAME)
STACK_ID = f"{STACK_CONSTRUCTION}/kernel/{STACK.theory}"  # the stacks' kernel row


def heads_bound_problems(stage: Stage = THEOREM6) -> list[str]:
    """Why ``stage``'s statements are not over every head count H (empty when they are): each must
    bind H among the sizes, and no premise may bound H above or fix it (``0 < H`` is allowed)."""
    out = []
    for name, text in stage.statements():
        binders, _, body = text.partition(",\n")
        if not _H_FREE.search(binders):
            out.append(f"{name} does not bind H among its sizes")
        fixed = _H_FIXED.search(body.replace("(0 < H)%nat", ""))
        if fixed:
            out.append(f"{name} bounds or fixes H: {fixed.group(0)!r}")
    return out


def _multi_head(timeout: float) -> Outcome:
    """Theorem 9's check: Theorem 6's theorems bind H, unbounded (the row rests on Theorem 6's)."""
    _ = timeout
    problems = heads_bound_problems()
    if problems:
        return Outcome.bad("; ".join(problems))
    names = THEOREM6.theorem_names
    detail = (
        f"Theorem 6's kernel theorems ({', '.join(names)}; {THEOREM6_ID}, required, "
        "lists their assumptions) bind the head count H among the sizes, H > 0 the only premise on it: the "
        "same theorems for every number of heads"
    )
    return Outcome(True, detail, kernel=KernelFacts(tuple(names), (), True, SIZES, via=THEOREM6_ID))


def universal_kernel_obligations() -> Iterable[Obligation]:
    """``simulator-stages/kernel/<Theory>``: each proved stage of U against the Coq layer, every
    capacity, under ``--deep`` (each gates its own statements and re-runs coqchk over its closure;
    the default run's Theorem 6 row compiles every stage, so a stage Coq rejects fails it, named);
    ``simulator/kernel/UniversalTheorem6``: U's whole layer (:data:`THEOREM6`), a row of U's own
    construction, in the default run, started first; ``.../multi-head``: Theorem 9, the same
    theorems read with H a variable (:func:`heads_bound_problems`), resting on that row;
    ``simulator-frame/kernel/UniversalStack``: stacks by looping (:data:`STACK`, its build holds
    Theorem 6's), in the default run."""
    premises = (
        "every encoding <T, X> laid out as U's encoder writes it (X and T's weights zero beyond their "
        "true sizes, each block at U's offset: the theorem's premises)"
    )
    for stage in STAGES:
        if stage.result:  # the kernel's default budget: it starts after Theorem 6's, whose libraries it waits on
            yield Obligation(
                STACK_ID, STACK_CONSTRUCTION, stage.result, "kernel", check(stage=stage),
                statement=f"{stage.claim} (coq/EncoderLayer.v's encoder_layer, m times)", tools=("coqc",),
            )  # fmt: skip
            continue
        if stage.theorem:
            whole = THEOREM6_ID
            statement = f"{stage.claim} (coq/EncoderLayer.v), for {premises}"
            yield Obligation(
                whole, THEOREM_CONSTRUCTION, THEOREM_REF, "kernel", check(stage=stage),
                statement=statement, tools=("coqc",), budget=THEOREM6_BUDGET,
            )  # fmt: skip
            yield Obligation(
                f"{whole}/multi-head", THEOREM_CONSTRUCTION, THEOREM9_REF, "kernel", _multi_head,
                statement=f"{statement}; Theorem 9: H heads, the same theorems", requires=(whole,),
                tools=("coqc",),
            )  # fmt: skip
            continue
        yield Obligation(
            f"{CONSTRUCTION}/kernel/{stage.theory}",
            CONSTRUCTION,
            PAPER_REF,
            "kernel",
            check(stage=stage),
            statement=f"{stage.claim} (coq/EncoderLayer.v) at every query of its grid, for every capacity "
            f"N, D, H, K, F and {premises} (one stage)",
            tools=("coqc",),
            deep=True,
        )


__all__ = [
    "ATTN_OUT",
    "CONSTRUCTION",
    "FFN_ACT",
    "FFN_OUT",
    "GRAM_ACT",
    "HEADS",
    "K_PROJ",
    "LAYER",
    "LAYER_NORM1",
    "Q_PROJ",
    "ROW_MEAN",
    "ROW_STATS",
    "SCORES",
    "SOFTMAX",
    "STACK",
    "STAGES",
    "THEOREM6",
    "V_PROJ",
    "Y1",
    "Y2",
    "Stage",
    "attn_out_definitions",
    "attn_out_theorems",
    "check",
    "ffn_act_definitions",
    "ffn_act_theorems",
    "ffn_out_definitions",
    "ffn_out_theorems",
    "files",
    "gram_act_theorems",
    "heads_bound_problems",
    "heads_definitions",
    "heads_theorems",
    "k_proj_theorems",
    "layer_norm1_definitions",
    "layer_norm1_theorems",
    "layer_theorems",
    "node_by_term",
    "q_proj_definitions",
    "q_proj_theorems",
    "row_mean_theorems",
    "row_stats_theorems",
    "scores_definitions",
    "scores_theorems",
    "softmax_definitions",
    "softmax_theorems",
    "source_problems",
    "stack_definitions",
    "stack_theorems",
    "statement",
    "statement_text",
    "theorem6_theorems",
    "theorem_name",
    "universal_kernel_obligations",
    "v_proj_definitions",
    "v_proj_theorems",
    "y1_theorems",
    "y2_theorems",
]
