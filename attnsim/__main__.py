"""``python -m attnsim``: the same command line as the ``attnsim`` console script."""

import sys

from attnsim.cli.main import main

sys.exit(main())
