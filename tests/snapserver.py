"""A real HTTP server on loopback that serves generated SNAP-format files, for the download tests and
for running lecture 30 in CI. It counts requests and can answer any path with a chosen status."""
from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np

from helpers.graph import Graph, from_edges, write_edge_list


class SnapServer:
    def __init__(self):
        self.files: dict[str, bytes] = {}      # path -> body
        self.statuses: dict[str, int] = {}     # path -> HTTP status to answer instead
        self.requests: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                server.requests.append(self.path)
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
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/"

    def serve(self, name: str, body: bytes) -> None:
        self.files["/" + name] = body

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def snap_file(graph: Graph, path: Path, id_space: int | None = None, seed: int = 0) -> Path:
    """Write ``graph`` as a SNAP .txt.gz; with ``id_space``, its vertices get sorted random ids below it,
    so that (as in SNAP's files) the largest id + 1 exceeds the vertex count."""
    if id_space is not None:
        ids = np.sort(np.random.default_rng(seed).choice(id_space, graph.num_vertices, replace=False))
        src, dst = graph.edges()
        graph = from_edges(src, dst, graph.num_vertices, original_ids=ids, name=graph.name)
    return write_edge_list(graph, path, header=f"generated test file: {graph.name}")
