"""The data cache: where it is kept (data directory, user cache, temp folder), the parsed graphs in it
(graph.npz and info.json, read back checked), and staging folders, removed once their owner is gone."""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from helpers.core.graph import (Graph, GraphFormatError, check_csr, check_host_memory, host_array,
                                offsets_dtype)
from helpers.core.progress import say
from helpers.data.download import DownloadError
from helpers.data.edgelist import open_regular
from helpers.data.graphfiles import write_atomically
from helpers.data.settings import (DATA_DIR_VARIABLE, data_dir, data_dir_setting, describe_path, home_folder,
                                   temp_data_dir, user_cache_dir)

CACHE_FORMAT = 2
STALE_STAGING = 24 * 3600  # seconds: a staging folder whose owner cannot be checked is left this long
VANISHED_RETRIES = 3       # tries of a load (and of a cache folder) that another process deletes under it
MAX_NAME = 200             # characters in a graph's name taken from a file (a statistics file, info.json)
ARRAYS = ("out_offsets", "out_targets", "in_offsets", "in_sources", "out_degree", "original_ids")   # in .npz


_TOLD: set[str] = set()      # what was already said about settings passed over, once per process


def candidate_roots() -> list[Path]:
    """Cache roots in order of preference: the data directory's cache/, the user cache, the temp one."""
    roots = []
    try:
        roots.append(data_dir() / "cache")
    except OSError:                           # data_dir() creates the folder and fails where it cannot
        try:
            if (configured := data_dir_setting()) is not None:
                roots.append(configured / "cache")
        except OSError:                       # a '~user' that names no one
            pass
    roots += [user_cache_dir() / "cache", temp_data_dir() / "cache"]
    return list(dict.fromkeys(roots))


def tell_if_passed_over() -> None:
    """Say, once per process and reason, what the cache passes over silently otherwise: a
    $PAGERANK_DATA_DIR that cannot be looked at, a home folder that cannot be used."""
    why = []
    try:
        data_dir_setting()
    except OSError as error:
        why.append(f"${DATA_DIR_VARIABLE}={os.environ.get(DATA_DIR_VARIABLE, '')!r} cannot be used "
                   f"({error.strerror or error})")
    home, no_home = home_folder()
    if not why and home is not None:          # the usual case: nothing passed over, nothing to say
        return
    first = candidate_roots()[0]
    if home is None and first == temp_data_dir() / "cache" and not any(no_home in w for w in why):
        why.append(f"no usable home folder ({no_home})")
    said = "; ".join(why) + f"; the cache is kept in {describe_path(first.parent)} instead"
    if why and said not in _TOLD:
        _TOLD.add(said)
        say(said)


def unwritable(folder: Path) -> str | None:
    """None if files can be written in ``folder`` (created if need be), else why not; a folder deleted
    between its creation and the test write is created again (a few times)."""
    for attempt in range(VANISHED_RETRIES):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(dir=folder):
                return None
        except OSError as error:
            if not isinstance(error, FileNotFoundError) or attempt + 1 == VANISHED_RETRIES:
                return error.strerror or type(error).__name__


def cache_folder(name: str) -> tuple[Path, list[str]]:
    """The first writable cache folder ``name`` and, for each root passed over, where and why."""
    passed = []
    for root in candidate_roots():
        why = unwritable(root / name)
        if why is None:
            no_home = home_folder()[1]
            if passed and no_home and root == temp_data_dir() / "cache":
                passed.append(f"no usable home folder ({no_home})")
            return root / name, passed
        passed.append(f"{root.parent} ({why})")
    raise DownloadError(f"{name}: no folder to keep the download in: cannot write to " + "; ".join(passed))


class Unusable(Exception):
    """The cache is there but cannot be used; says why."""


def fit_name(name) -> bool:
    """Whether a graph's name read from a file is one line of at most MAX_NAME printable characters."""
    return isinstance(name, str) and bool(name.strip()) and name.isprintable() and len(name) <= MAX_NAME


def save(graph: Graph, folder: Path, info: dict, keys=ARRAYS) -> None:
    digest = save_npz(graph, folder / "graph.npz", keys)          # the arrays first: an info.json never
    info = {"format": CACHE_FORMAT, **info, "arrays_sha256": digest}      # describes arrays not there yet
    write_atomically(folder / "info.json", lambda f: f.write(json.dumps(info, indent=1).encode()))


def read_info(folder: Path) -> dict | None:
    """info.json as a dict; None where it is missing; Unusable where it is there but not a usable record."""
    try:
        with open_regular(folder / "info.json") as f:
            info = json.loads(f.read(1 << 20))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:                  # a FIFO, a folder, a symlink loop, no permission
        raise Unusable(f"info.json: {error.strerror or error}") from None
    except (ValueError, RecursionError) as error:      # RecursionError: JSON nested deeper than Python goes
        raise Unusable(f"info.json unreadable ({type(error).__name__}: {str(error)[:100]})") from None
    if not isinstance(info, dict):
        raise Unusable(f"info.json holds a {type(info).__name__}, not a record")
    return info


def cached_graph(folder: Path, record: dict, keys=ARRAYS) -> Graph | None:
    """The graph cached in ``folder``, or None where there is none; Unusable, saying why, where one is
    there but its info.json differs from ``record`` or its arrays fail a check (graphfiles.load_npz)."""
    info = read_info(folder)
    if info is None:
        return None
    n, m, digest = info.get("vertices"), info.get("edges"), info.get("arrays_sha256")
    shown = info.get("graph_name", info.get("name"))
    if info.get("format") != CACHE_FORMAT:
        raise Unusable(f"cache format {info.get('format')!r}, this version writes {CACHE_FORMAT}")
    if any(info.get(key) != value for key, value in record.items()):
        raise Unusable("it describes another dataset or version")
    if not (all(isinstance(v, int) and not isinstance(v, bool) for v in (n, m)) and 0 < n and 0 <= m <= n * n
            and isinstance(digest, str) and fit_name(shown)):
        raise Unusable("info.json lacks the counts, the content hash or the graph's name")
    try:
        return load_npz(folder / "graph.npz", n, m, sha256=digest, name=shown, keys=keys)
    except GraphFormatError as error:
        raise Unusable(str(error)) from None
    except OSError as error:                  # a FIFO or a folder where graph.npz should be, ...
        raise Unusable(f"{Path(error.filename or 'graph.npz').name}: {error.strerror or error}") from None
    except Exception as error:                # noqa: BLE001: any damage (BadZipFile, EOFError, ...)
        raise Unusable(f"{type(error).__name__}: {str(error)[:100]}") from None


def arrays_sha256(arrays: dict) -> str:
    """A content hash of a graph's arrays: names, dtypes, lengths and bytes, in the order of ARRAYS."""
    digest = hashlib.sha256()
    for key in (k for k in ARRAYS if k in arrays):
        array = np.ascontiguousarray(host_array(arrays[key], key))
        digest.update(f"{key}:{array.dtype.str}:{array.size};".encode())
        digest.update(array)
    return digest.hexdigest()


def save_npz(graph: Graph, path: Path, keys=ARRAYS) -> str:
    """Write the graph's arrays named in ``keys`` to ``path`` (np.savez, atomically); their content hash."""
    arrays = {k: getattr(graph, k) for k in keys}
    write_atomically(path, lambda f: np.savez(f, **arrays))
    return arrays_sha256(arrays)


def load_npz(path: Path, num_vertices: int, num_edges: int, *, sha256: str, name: str,
             keys=ARRAYS) -> Graph:
    """The Graph ``save_npz`` wrote, read from a regular file without pickles once each array's .npy header
    and the host's memory agree with the counts; then the CSR rules and the hash (GraphFormatError)."""
    n, m = num_vertices, num_edges
    wanted = {"out_offsets": (offsets_dtype(m), n + 1), "out_targets": (np.int32, m),
              "in_offsets": (offsets_dtype(m), n + 1), "in_sources": (np.int32, m),
              "out_degree": (np.int32, n), "original_ids": (np.int64, n)}
    wanted = {key: (np.dtype(wanted[key][0]), wanted[key][1]) for key in keys}
    check_host_memory(sum(d.itemsize * size for d, size in wanted.values()), f"reading {path.name}",
                      f"{n:,} vertices and {m:,} edges", "delete the file")
    with open_regular(path) as f, np.load(f, allow_pickle=False) as archive:
        found = sorted(getattr(archive, "files", []))
        if found != sorted(wanted):
            raise GraphFormatError(f"{path.name} holds {', '.join(found) or 'no arrays'}, not the arrays "
                                   f"expected")
        for key, (dtype, size) in wanted.items():
            with archive.zip.open(f"{key}.npy") as member:
                version = np.lib.format.read_magic(member)
                if version not in ((1, 0), (2, 0)):
                    raise GraphFormatError(f"{key}: unknown .npy version {version}")
                reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
                    np.lib.format.read_array_header_2_0
                shape, _, stored = reader(member)
            if stored != dtype or shape != (size,):
                raise GraphFormatError(f"{key} is {stored} of shape {shape}, expected {dtype} of ({size},)")
        arrays = {key: archive[key] for key in wanted}
    check_csr(n, **arrays, thorough=False)      # row order and transposition: the content hash says
    if "original_ids" in arrays and n > 1 and not (np.diff(arrays["original_ids"]) > 0).all():
        raise GraphFormatError("original_ids are not increasing")
    if arrays_sha256(arrays) != sha256:
        raise GraphFormatError("the arrays do not match their recorded content hash")
    return Graph(n, name=name, **arrays)


_STAGING = re.compile(r"\.download-([0-9]+)-([0-9]+)-([0-9a-f]{12})-")    # pid, start time, machine


def _process_stat(pid: int) -> list[bytes] | None:
    """The fields of /proc/<pid>/stat after the command's name (the state first), None where there is none."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields if len(fields) > 19 else None


@functools.cache
def machine() -> str | None:
    """This boot and pid namespace, hashed: pids are compared only within it; None without /proc."""
    try:
        with open("/proc/sys/kernel/random/boot_id", "rb") as f:
            boot = f.read().strip()
        namespace = os.readlink("/proc/self/ns/pid").encode()
    except OSError:
        return None
    return hashlib.sha256(boot + b"/" + namespace).hexdigest()[:12]


def owner_tag(pid: int) -> str | None:
    """'<pid>-<start time>-<machine>' of a running process (its own after the pid is reused), or None."""
    fields, here = _process_stat(pid), machine()
    return None if fields is None or here is None else f"{pid}-{int(fields[19])}-{here}"


def _abandoned(staging: Path) -> bool:
    """Whether a staging folder's owner is gone (ended, or its pid names another process now); one whose
    owner cannot be checked (no /proc, another machine, an older name) is, once a day old."""
    owner = _STAGING.match(staging.name)
    if owner and owner[3] == machine():
        fields = _process_stat(int(owner[1]))
        if fields is not None:
            return fields[0] in (b"Z", b"X") or int(fields[19]) != int(owner[2])     # a zombie has ended
        try:
            os.kill(int(owner[1]), 0)          # no /proc entry: gone, unless /proc hides other users'
        except ProcessLookupError:
            return True
        except OSError:
            pass
    return time.time() - staging.stat().st_mtime > STALE_STAGING


def remove_abandoned(folder: Path) -> None:
    """Remove the staging folders in ``folder`` whose owner is gone (a download killed midway)."""
    try:
        found = list(folder.glob(".download-*"))
    except OSError:                           # a folder that cannot be looked at (a name too long, ...)
        return
    for staging in found:
        with contextlib.suppress(OSError):    # gone already, or it cannot be looked at
            if _abandoned(staging):
                shutil.rmtree(staging, ignore_errors=True)
