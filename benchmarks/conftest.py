"""pytest-benchmark suite (run: ``pytest benchmarks/``; not collected by plain ``pytest``, whose
testpaths is tests/). Nothing here asserts on time."""
