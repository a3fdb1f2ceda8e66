"""A real HTTP server on loopback that serves generated SNAP-format files, for the download tests and
for running lecture 30 in CI. It counts requests, can answer any path with a chosen status, and can
misbehave the ways real servers and networks do: drop the connection mid-body, trickle bytes, stall
before its headers or in the body, redirect anywhere, send no length, or send without end."""
from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np

from helpers.data.graphfiles import write_edge_list
from helpers.core.graph import Graph, from_edges


class SnapServer:
    def __init__(self):
        self.files: dict[str, bytes] = {}      # path -> body
        self.statuses: dict[str, int] = {}     # path -> HTTP status to answer instead
        self.plans: dict[str, list] = {}       # path -> misbehaviours, one used up per request
        self.requests: list[str] = []
        self.authorizations: list[str | None] = []     # each request's Authorization header
        self.closing = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                server.requests.append(self.path)
                server.authorizations.append(self.headers.get("Authorization"))
                plan = server.plans.get(self.path)
                if plan:
                    behaviour = plan.pop(0)
                    try:
                        behaviour(self, server.files.get(self.path, b""))
                    except OSError:           # the client went away: nothing more to do
                        pass
                    self.close_connection = True
                    return
                status = server.statuses.get(self.path)
                body = server.files.get(self.path)
                if status is None and body is None:
                    status = 404
                if status is not None:
                    self.send_response(status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/gzip")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/"

    def serve(self, name: str, body: bytes) -> None:
        self.files["/" + name] = body

    def plan(self, name: str, *behaviours) -> None:
        """Answer the next requests for ``name`` with these behaviours, one each; then serve normally."""
        self.plans.setdefault("/" + name, []).extend(behaviours)

    def close(self) -> None:
        self.closing.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    # --- misbehaviours: each is called as behaviour(handler, body) --------------------------------

    def drop_after(self, count: int):
        """Announce the whole body, send ``count`` bytes of it, close the connection."""
        def behaviour(handler, body):
            _headers(handler, len(body))
            handler.wfile.write(body[:count])
            handler.wfile.flush()
        return behaviour

    def trickle(self, interval: float = 0.5, step: int = 1, length: bool = True):
        """Announce the body; send ``step`` bytes every ``interval`` seconds until the client goes away."""
        def behaviour(handler, body):
            _headers(handler, len(body) if length else None)
            for start in range(0, len(body), step):
                if self.closing.wait(interval):
                    return
                handler.wfile.write(body[start:start + step])
                handler.wfile.flush()
        return behaviour

    def stall_after(self, count: int):
        """Announce the whole body, send ``count`` bytes of it, then nothing until the client goes away."""
        def behaviour(handler, body):
            _headers(handler, len(body))
            handler.wfile.write(body[:count])
            handler.wfile.flush()
            self.closing.wait(60)
        return behaviour

    def slow_headers(self, interval: float = 0.5):
        """Send the status line one byte at a time, never finishing the headers."""
        def behaviour(handler, body):
            for byte in b"HTTP/1.1 200 OK\r\nX-Padding: " + b"x" * 100_000:
                if self.closing.wait(interval):
                    return
                handler.wfile.write(bytes([byte]))
                handler.wfile.flush()
        return behaviour

    def silent(self, seconds: float = 30.0):
        """Read the request and answer nothing."""
        def behaviour(handler, body):
            self.closing.wait(seconds)
        return behaviour

    def redirect(self, location: str, status: int = 302):
        def behaviour(handler, body):
            handler.send_response(status)
            handler.send_header("Location", location)
            handler.send_header("Content-Length", "0")
            handler.send_header("Connection", "close")          # as every planned behaviour does
            handler.end_headers()
        return behaviour

    def without_length(self, extra: bytes = b"", repeat: int = 1):
        """Send the body (plus ``extra`` ``repeat`` times) with no Content-Length, then close."""
        def behaviour(handler, body):
            _headers(handler, None)
            handler.wfile.write(body)
            for _ in range(repeat):
                if self.closing.is_set():
                    return
                handler.wfile.write(extra)
        return behaviour

    def endless(self, block: bytes = b"0 1\n" * 16384):
        """Send ``block`` again and again, with no Content-Length, until the client goes away."""
        def behaviour(handler, body):
            _headers(handler, None)
            while not self.closing.is_set():
                handler.wfile.write(block)
        return behaviour

    def announce(self, length: int):
        """Claim a Content-Length of ``length`` and send the real body."""
        def behaviour(handler, body):
            _headers(handler, length)
            handler.wfile.write(body)
        return behaviour

    def garbage(self, data: bytes = b"HELLO THERE\r\n\r\n"):
        """Answer with something that is not HTTP."""
        def behaviour(handler, body):
            handler.wfile.write(data)
            handler.wfile.flush()
        return behaviour


def _headers(handler, length: int | None) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "application/gzip")
    if length is not None:
        handler.send_header("Content-Length", str(length))
    handler.send_header("Connection", "close")                  # a planned behaviour ends the connection
    handler.end_headers()
    handler.wfile.flush()


def snap_file(graph: Graph, path: Path, id_space: int | None = None, seed: int = 0) -> Path:
    """Write ``graph`` as a SNAP .txt.gz; with ``id_space``, its vertices get sorted random ids below it,
    so that (as in SNAP's files) the largest id + 1 exceeds the vertex count."""
    if id_space is not None:
        ids = np.sort(np.random.default_rng(seed).choice(id_space, graph.num_vertices, replace=False))
        src, dst = graph.edges()
        graph = from_edges(src, dst, graph.num_vertices, original_ids=ids, name=graph.name)
    return write_edge_list(graph, path, header=f"generated test file: {graph.name}", compresslevel=1)


@functools.cache
def snap_bytes(graph: Graph, id_space: int | None = None, seed: int = 0) -> bytes:
    """The bytes of ``snap_file`` for this graph, made once per test session."""
    with tempfile.TemporaryDirectory() as folder:
        return snap_file(graph, Path(folder) / "served.txt.gz", id_space, seed).read_bytes()


@contextlib.contextmanager
def serving(monkeypatch, folder: Path, ds, body: bytes):
    """A SnapServer serving ``body`` as the file of dataset ``ds``, with the data settings pointed at it and
    at ``folder`` (data directory and home), SNAP's statistics in force and short pauses between retries."""
    from helpers.data import datasets, download

    server = SnapServer()
    monkeypatch.setenv(datasets.BASE_URL_VARIABLE, server.url)
    monkeypatch.setenv("PAGERANK_DATA_DIR", str(folder / "data"))
    monkeypatch.setenv("HOME", str(folder / "home"))
    monkeypatch.delenv(datasets.STATISTICS_VARIABLE, raising=False)
    monkeypatch.setattr(download, "RETRY_PAUSE", 0.05)
    server.body = body
    server.serve(ds.filename, body)
    try:
        yield server
    finally:
        server.close()


def cached_files(ds) -> list[str]:
    """The files in a dataset's cache folder."""
    from helpers.data import datasets

    return sorted(p.name for p in datasets.cache_dir(ds).rglob("*") if p.is_file())


def bounded(call, seconds: float = 30.0):
    """Run ``call`` in a thread and fail the test, instead of hanging it, if it has not returned in time;
    returns what it returned, or the exception it raised."""
    outcome = {}

    def run():
        try:
            outcome["value"] = call()
        except BaseException as error:          # noqa: BLE001: handed to the test
            outcome["value"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds:g} s: it blocks"
    return outcome["value"]


def load_elsewhere(ds, env: dict | None = None, **options) -> subprocess.Popen:
    """Another Python process that loads dataset ``ds`` (``datasets.load(ds, **options)``) with this one's
    settings (``env`` on top) and prints 'loaded <vertices> <edges>'; its output is piped."""
    code = ("import sys\nfrom helpers.data import datasets\n"
            "ds = datasets.Dataset(sys.argv[1], sys.argv[2], sys.argv[3] == 'True', *map(int, sys.argv[4:]))\n"
            f"graph = datasets.load(ds, **{options!r})\nprint('loaded', graph.num_vertices, graph.num_edges)")
    root = str(Path(__file__).resolve().parent.parent)
    path = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
    return subprocess.Popen([sys.executable, "-c", code, ds.name, ds.filename, str(ds.directed),
                             str(ds.vertices), str(ds.listed_edges)], env={**os.environ, "PYTHONPATH": path,
                                                                           **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
