"""cudoctor: why GPU and BLAS work fails, and what fixes it."""

__version__ = "0.1.0"
