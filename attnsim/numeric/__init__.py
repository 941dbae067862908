"""The numeric twin: GAHAT-RASP programs run in float64, planned from what they state.

:mod:`~attnsim.numeric.executor` plans a program once per length and runs it;
:mod:`~attnsim.numeric.index_plan` plans index maps over positions from their expressions,
:mod:`~attnsim.numeric.heads` the selectors and their reductions, and
:mod:`~attnsim.numeric.values` is the value they pass (a head over a frame of positions, then one
value).  The reference it is tested against is :mod:`attnsim.rasp.interpreter`.
"""
