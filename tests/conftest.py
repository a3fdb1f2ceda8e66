"""Test-wide switches: GPU tests and GPU notebooks are skipped, with the reason, where there is no GPU."""
import json
from functools import lru_cache
from pathlib import Path

import pytest

from helpers import gpu


@lru_cache(maxsize=None)
def _notebook_needs_gpu(path: str) -> bool:
    metadata = json.loads(Path(path).read_text()).get("metadata", {})
    return bool(metadata.get("course", {}).get("needs_gpu", False))


def pytest_collection_modifyitems(config, items):
    status = gpu.gpu_status()
    if status.available:
        return
    skip = pytest.mark.skip(reason=f"needs a CUDA GPU; GPU: {status.description}")
    for item in items:
        path = str(item.path)
        if "gpu" in item.keywords or (path.endswith(".ipynb") and _notebook_needs_gpu(path)):
            item.add_marker(skip)
