import sys

from ptxdiff.cli.main import main

sys.exit(main())
