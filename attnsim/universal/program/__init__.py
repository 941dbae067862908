"""U's program: ONE GAHAT-RASP program per capacity (max_len N, d_model D, n_heads H, d_head K, d_ff F).

Built from two composable lemma forms (:mod:`attnsim.constructions.forms.contraction`: a gather whose index map
folds transposes, views and broadcasts; a sum read at its consumer's positions) and one
value-scored max head.  Seven attention layers at every capacity (``variant="compact"``), each a
set of heads followed by an MLP:

1. gather X[i, l] and W_{q,k,v}[h, l, c] onto the projection products; the row statistics of X
   (pre-norm); MLP: LayerNorm 1 (pre-norm) and the products;
2. the projections Q, K (read at the score products (h, i, j, c)) and V (read at the V W_O
   products (h, j, c, e)); MLP: q k and v W_O;
3. the scores S[h, i, j] and (V W_O)[h, j, e], read at the products (h, i, j, e); MLP: logits
   (scale, additive mask) and which keys are allowed (j < n, not blocked);
4. the row max of the allowed logits (one value-scored head); MLP: exp(logit - max), numerator
   terms;
5. the softmax numerator and denominator per head, read where the next sums need them; MLP:
   the head outputs O[h, i, e] and the products for LayerNorm 1 and FFN 1;
6. R = X + attention (residual), its row statistics, FFN 1's linear part (with LayerNorm folded
   in: pre = rstd (sum R g W1 - mu sum g W1) + sum beta W1 + b1); MLP: LayerNorm 1, the
   activation, the FFN 2 products and the terms of LayerNorm 2's statistics (via W2 W2^T);
7. FFN 2's sum and LayerNorm 2's statistics; MLP: the output.

One module per part: :mod:`.blocks` (the grids, gathers, sums, masks and LayerNorm pieces every
stage uses), :mod:`.attention` (layers 1-4), :mod:`.output` (layers 5-7 and the write) and
:mod:`.driver` (:class:`UniversalProgram`, which runs them in order and says what a build writes).
"""

from attnsim.universal.program.blocks import Mask
from attnsim.universal.program.driver import VARIANTS, UniversalProgram

__all__ = ["VARIANTS", "Mask", "UniversalProgram"]
