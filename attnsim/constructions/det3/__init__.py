"""Lemma (inverse, determinant): the 3 x 3 cofactor matrix, determinant and inverse."""
