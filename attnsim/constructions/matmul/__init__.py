"""Lemma (matmul): a transformer multiplies two matrices (gather heads and a mean over the inner index)."""
