"""Activation ReLU: max(x, 0) entry by entry, an MLP with no attention."""
