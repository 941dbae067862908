(** torch's [nn.TransformerEncoderLayer], stated with MathComp: the layer T that Theorem 6 says U
    simulates.  Part of what a reader of the Coq theorem must trust; it follows torch's
    documented forward pass (torch/nn/modules/transformer.py, [F.multi_head_attention_forward]):

      x = src
      if norm_first:  x = x + _sa_block(norm1(x), mask);  x = x + _ff_block(norm2(x))
      else:           x = norm1(x + _sa_block(x, mask));   x = norm2(x + _ff_block(x))
      _sa_block(x)  = out_proj(concat_h(softmax(scale * q_h k_h^T + mask) v_h))
      _ff_block(x)  = linear2(activation(linear1(x)))        (dropout 0: the eval-mode layer)

    with attnsim's T options on top: the residual connections and the FFN may be left out, and the
    norm may be absent ([NoNorm]); torch's layer is [residual = true], [has_ffn = true].

    Sizes.  Everything lives at a capacity: at most [N] tokens, model width [D], [H] heads of width
    [K], FFN width [F]; the layer's true sizes are [n <= N] tokens, [d_model <= D], [nhead <= H],
    [d_head <= K], [dim_ff <= F].  Every sum runs over the true sizes only and every result is 0
    outside its true block (zero padding), so what the padding of the input or of the weights holds
    is never read.

    Convention: row vectors, [y = x W + b], as attnsim's T; torch stores [W] transposed ([x W^T]):
    [Wq t] is rows [t * d_head .. (t + 1) * d_head) of the q block of torch's [in_proj_weight],
    transposed; [Wo t] is rows [t * d_head ..) of [out_proj.weight^T], the rows that multiply head
    [t]'s columns of the concatenation.  The exponential and the square root are parameters
    [expf], [sqrtf] (the theorem is for any of them applied alike on both sides); torch's layer
    over the reals is [torch_encoder_layer] at the end, with [expR] and [Num.sqrt]. *)
From mathcomp Require Import all_ssreflect all_algebra.
From mathcomp Require Import reals sequences exp.
Import GRing.Theory Num.Theory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.
Local Open Scope ring_scope.

(** Where LayerNorm goes: nowhere, after each residual add (torch's default), or before each
    sublayer ([norm_first=True]). *)
Inductive norm_place := NoNorm | PostNorm | PreNorm.

Section Layer.
Variable R : realFieldType.
Variables (expf sqrtf : R -> R).
Variables (N D H K F : nat).

(** The layer's parameters (torch's module, read in the row convention above). *)
Record params := Params {
  d_model : nat; nhead : nat; d_head : nat; dim_ff : nat;
  Wq : 'I_H -> 'M[R]_(D, K); Wk : 'I_H -> 'M[R]_(D, K); Wv : 'I_H -> 'M[R]_(D, K);
  bq : 'I_H -> 'rV[R]_K; bk : 'I_H -> 'rV[R]_K; bv : 'I_H -> 'rV[R]_K;
  Wo : 'I_H -> 'M[R]_(K, D); bo : 'rV[R]_D;
  W1 : 'M[R]_(D, F); b1 : 'rV[R]_F; W2 : 'M[R]_(F, D); b2 : 'rV[R]_D;
  norm1_w : 'rV[R]_D; norm1_b : 'rV[R]_D; norm2_w : 'rV[R]_D; norm2_b : 'rV[R]_D;
  eps : R;                 (** layer_norm_eps *)
  scale : R;               (** torch: 1 / sqrt(d_head) ([torch_scale]); T may declare another *)
  activation : R -> R;     (** ReLU ([relu]), GELU...: applied alike on both sides *)
  residual : bool; norm : norm_place; has_ffn : bool }.

(** The attention masks of one sequence, torch's three merged: key [key] is hidden from query [i]
    when [blocked i key] (a bool [src_mask] entry True, [src_key_padding_mask] True at [key], or
    [is_causal] and [i < key]); [additive] is a float [src_mask] (0 when there is none). *)
Record mask := Mask { blocked : 'I_N -> 'I_N -> bool; additive : 'M[R]_(N, N) }.

Definition causal (i key : 'I_N) : bool := (i < key)%N.
Definition key_padding (pad : 'I_N -> bool) (i key : 'I_N) : bool := pad key.

Variables (P : params) (M : mask) (n : nat).
Local Notation d := (d_model P).
Local Notation h := (nhead P).
Local Notation k := (d_head P).
Local Notation f := (dim_ff P).

(** A matrix read on its true block (rows < r, columns < c), 0 elsewhere. *)
Definition block r c (m1 m2 : nat) (A : 'M[R]_(m1, m2)) : 'M[R]_(m1, m2) :=
  \matrix_(i, j) if (i < r)%N && (j < c)%N then A i j else 0.

(** LayerNorm over the d features of each row: torch's biased variance, eps inside the root. *)
Definition row_mean (X : 'M[R]_(N, D)) (i : 'I_N) : R := (\sum_(j < D | (j < d)%N) X i j) / d%:R.
Definition row_var (X : 'M[R]_(N, D)) (i : 'I_N) : R :=
  (\sum_(j < D | (j < d)%N) (X i j - row_mean X i) ^+ 2) / d%:R.
Definition layer_norm (w b : 'rV[R]_D) (X : 'M[R]_(N, D)) : 'M[R]_(N, D) :=
  block n d (\matrix_(i, j) ((X i j - row_mean X i) / sqrtf (row_var X i + eps P) * w 0 j + b 0 j)).

(** The per-head projections: Z W + b over the d features. *)
Definition proj (W : 'I_H -> 'M[R]_(D, K)) (b : 'I_H -> 'rV[R]_K) (Z : 'M[R]_(N, D)) (t : 'I_H)
  : 'M[R]_(N, K) := block n k (\matrix_(i, c) (\sum_(j < D | (j < d)%N) Z i j * W t j c + b t 0 c)).

(** Scaled scores plus the float mask, added after scaling as torch does:
    (scale * q_i . k_key) + additive i key.  The parentheses around the sum matter: without them
    [scale P * \sum_(c) ... + additive M i key] parses as [scale P * (\sum_(c) ... + additive M i key)]. *)
Definition scores (Z : 'M[R]_(N, D)) (t : 'I_H) : 'M[R]_(N, N) :=
  block n n (\matrix_(i, key)
    (scale P * (\sum_(c < K | (c < k)%N) proj (Wq P) (bq P) Z t i c * proj (Wk P) (bk P) Z t key c)
     + additive M i key)).

(** Row softmax over the keys a query may see (a hidden key is torch's -inf: exp gives 0). *)
Definition allowed (i key : 'I_N) : bool := (key < n)%N && ~~ blocked M i key.
Definition softmax_rows (S : 'M[R]_(N, N)) : 'M[R]_(N, N) :=
  \matrix_(i, key) if (i < n)%N && allowed i key
                 then expf (S i key) / \sum_(m < N | allowed i m) expf (S i m) else 0.

(** One head: softmax(scores) v. *)
Definition head (Z : 'M[R]_(N, D)) (t : 'I_H) : 'M[R]_(N, K) :=
  block n k (\matrix_(i, c)
    \sum_(key < N | (key < n)%N) softmax_rows (scores Z t) i key * proj (Wv P) (bv P) Z t key c).

(** concat_t(head t) W_o + b_o: column c of head t is column t * d_head + c of the concatenation. *)
Definition self_attn (Z : 'M[R]_(N, D)) : 'M[R]_(N, D) :=
  block n d (\matrix_(i, j)
    (\sum_(t < H | (t < h)%N) \sum_(c < K | (c < k)%N) head Z t i c * Wo P t c j + bo P 0 j)).

(** linear2(activation(linear1(Z))). *)
Definition ff_block (Z : 'M[R]_(N, D)) : 'M[R]_(N, D) :=
  block n d (\matrix_(i, j)
    (\sum_(e < F | (e < f)%N)
        activation P (\sum_(j' < D | (j' < d)%N) Z i j' * W1 P j' e + b1 P 0 e) * W2 P e j
     + b2 P 0 j)).

(** A sublayer's output added to its input when the layer has residual connections. *)
Definition add_residual (X Y : 'M[R]_(N, D)) : 'M[R]_(N, D) := if residual P then X + Y else Y.

Definition norm1 := layer_norm (norm1_w P) (norm1_b P).
Definition norm2 := layer_norm (norm2_w P) (norm2_b P).

(** The layer on the input's true block (n tokens of d features). *)
Definition encoder_layer (src : 'M[R]_(N, D)) : 'M[R]_(N, D) :=
  let x := block n d src in
  match norm P with
  | PreNorm =>
      let x1 := add_residual x (self_attn (norm1 x)) in
      if has_ffn P then add_residual x1 (ff_block (norm2 x1)) else x1
  | PostNorm =>
      let x1 := norm1 (add_residual x (self_attn x)) in
      if has_ffn P then norm2 (add_residual x1 (ff_block x1)) else x1
  | NoNorm =>
      let x1 := add_residual x (self_attn x) in
      if has_ffn P then add_residual x1 (ff_block x1) else x1
  end.

End Layer.

(** torch's layer over the reals: [expR], [Num.sqrt], scale 1 / sqrt(d_head), ReLU = max(x, 0). *)
Section Torch.
Variable R : realType.
Local Open Scope ring_scope.

Definition relu (x : R) : R := Num.max x 0.
Definition torch_scale (d_head : nat) : R := (Num.sqrt (d_head%:R))^-1.

Definition torch_encoder_layer (N D H K F : nat) (P : params R D H K F) (M : mask R N) (n : nat)
  : 'M[R]_(N, D) -> 'M[R]_(N, D) :=
  encoder_layer (@expR R) Num.sqrt P M n.

(** A layer as torch builds it: residual connections and an FFN, scale 1 / sqrt(d_head). *)
Definition is_torch_layer (D H K F : nat) (P : params R D H K F) : Prop :=
  residual P /\ has_ffn P /\ norm P <> NoNorm /\ scale P = torch_scale (d_head P)
  /\ (d_model P = nhead P * d_head P)%N.

End Torch.
