"""det(n) and inverse(n) by Faddeev-LeVerrier, and its steps (trace, Frobenius, iteration)."""
