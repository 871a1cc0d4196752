"""Benchmark suite of vfl (run as ``python -m benchmarks``; not installed).

Cases (see :mod:`benchmarks.cases`): ADMM epoch cost against the two-pass
floor, per-epoch speedup over the paper's prototype strategy
(:mod:`benchmarks.prototype`), time to 1e-4 relative suboptimality against
central sklearn, scaling in features and samples against FDML SGD, and peak
memory. Every number of one run comes from the same process and data.
"""
