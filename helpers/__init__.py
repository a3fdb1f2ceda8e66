"""Helpers for the course *PageRank on the GPU*: graphs, generators, the float64 reference, data, GPU facts,
kernels, the benchmark, and the exercises' checkers and student-version generator.

Importing helpers never imports CuPy; the functions that need a GPU ask for it and say what to do.
"""
__version__ = "0.1.0"
