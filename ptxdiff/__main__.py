"""`python -m ptxdiff`: the same as the `ptxdiff` console script (the hooks start it this way)."""

import sys

from ptxdiff.cli.main import main

sys.exit(main())
