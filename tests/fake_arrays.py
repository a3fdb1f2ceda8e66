"""Arrays the helpers must refuse, made without CuPy: a stand-in for a CuPy array, a masked one, a matrix."""
import numpy as np


class GpuArray:
    """What a CuPy array looks like from outside: its type's module and a CUDA array interface."""
    __module__ = "cupy._core.core"
    __cuda_array_interface__ = {"shape": (3,), "typestr": "<f8", "data": (0, False), "version": 3}
    shape, ndim, size, dtype = (3,), 1, 3, np.dtype(np.float64)


def masked(values=(1.0, 9.0, 2.0), hidden: int = 1):
    """A masked array whose entry ``hidden`` is masked (NumPy reads it through the mask)."""
    mask = np.zeros(len(values), dtype=bool)
    mask[hidden] = True
    return np.ma.masked_array(np.array(values), mask=mask)


def matrix(values=(1.0, 2.0, 3.0)):
    """A one-row numpy.matrix (made without NumPy's PendingDeprecationWarning about the class)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        return np.matrix([list(values)])
