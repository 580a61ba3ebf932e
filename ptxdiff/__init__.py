"""ptxdiff: what did this change do to the compiled Triton kernel?"""

import os

__version__ = "0.1.0"

# The installed package folder: hooks/ beside it, its own sources for cache keys (os.path only:
# the diff driver's warm path imports this too).
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
