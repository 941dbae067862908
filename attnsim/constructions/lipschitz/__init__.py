"""The Lipschitz / Hölder approximator: a piecewise-linear interpolation network."""
