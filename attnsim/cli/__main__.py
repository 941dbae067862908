"""``python -m attnsim.cli``: the same as the ``attnsim`` command."""

from attnsim.cli.main import main

raise SystemExit(main())
