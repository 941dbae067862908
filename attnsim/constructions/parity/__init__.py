"""k-PARITY and sparse parity: the parity of a bit string (or of a fixed subset) at every position."""
