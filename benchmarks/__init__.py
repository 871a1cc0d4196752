"""Benchmark suite of vfl (run as ``python -m benchmarks``; not installed).

Cases (see :mod:`benchmarks.cases` and :mod:`benchmarks.variants`): ADMM
epoch cost against the streaming two-pass and memory-bandwidth floors,
per-epoch speedup over the paper's prototype strategy
(:mod:`benchmarks.prototype`), time to 1e-4 relative suboptimality against
central sklearn, the variants of ADMM sharing (epochs and time to 1e-4 and
1e-6 next to sklearn lbfgs / newton-cholesky, the z-update, gisette-shaped,
under noise, epsilon to a target test loss), scaling in features and samples
against FDML SGD, and peak memory. Every number of one run comes from the
same process and data. Other algorithms' benchmarks plug in through
:data:`benchmarks.runner.EXTERNAL`.
"""
