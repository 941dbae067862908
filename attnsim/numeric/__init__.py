"""The planned numeric executor: GAHAT-RASP programs run in float64 from a plan made once per
program and length (docs/engine-performance.md); tested against :mod:`attnsim.rasp.interpreter`."""
