"""Lemma (transpose): a transformer transposes an r x c matrix (one gather head)."""
