"""The OS sandbox of the compile workers: the trust boundary around repository content.

Everything that evaluates or compiles a revision (the restricted evaluator, the kernel builder,
triton's code generator, ptxas and cuobjdump) runs in compile workers. Each worker starts from a
clean interpreter (launcher.py, environment.py), leaves the user's namespaces where the kernel
allows (namespaces.py), runs under rlimits and a wall-clock bound the repository cannot raise
(limits.py), and then seals itself: Landlock (landlock.py: what it may read, write and execute,
no TCP) and a seccomp filter for what Landlock does not cover (seccomp.py). policy.py says which
paths, enter.py applies it in order, probe.py tells the parent and `ptxdiff doctor` what holds.
"""
