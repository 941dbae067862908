"""Lemma 3 (softmax): a transformer computes a row softmax, plain, max-shifted and masked."""
