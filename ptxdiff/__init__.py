"""ptxdiff: what did this change do to the compiled Triton kernel?"""

__version__ = "0.1.0"
