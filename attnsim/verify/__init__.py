"""The verification harness: running obligations (local pool or Dask), budgets, the result cache,
campaigns, the scope tables of ``attnsim verify`` and mutation testing."""
