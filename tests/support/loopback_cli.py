"""Test helpers shared across test packages: `harness` invoked in-process as the CLI would
report it, and a PEP 503 simple index on loopback for `--to latest`."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def invoke_cli(args: list[str]) -> subprocess.CompletedProcess:
    """`harness <args>` through typer's CliRunner; a HarnessError becomes what
    harness.cli.main prints and exits with (the subprocess tests check main itself)."""
    from typer.testing import CliRunner

    from harness.cli import app
    from harness.errors import HarnessError

    result = CliRunner().invoke(app, args)
    stderr, code = result.stderr, result.exit_code
    if isinstance(result.exception, HarnessError):
        stderr, code = stderr + f"harness: error: {result.exception}\n", result.exception.exit_code
    elif result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return subprocess.CompletedProcess(args, code, result.stdout, stderr)


@contextmanager
def simple_index(package: str, files: tuple[str, ...]) -> Iterator[str]:
    """A PEP 503 simple index on loopback listing `files` for `package` (never serving them);
    yields its URL (".../simple")."""

    class Index(BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path.rstrip("/") != f"/simple/{package}":
                self.send_error(404)
                return
            body = "".join(f'<a href="/files/{name}">{name}</a>\n' for name in files).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/simple"
    finally:
        server.shutdown()


def pip_env(index: str) -> dict[str, str]:
    """The environment that makes pip ask only `index`, once, quickly."""
    return {"PIP_CONFIG_FILE": "/dev/null", "PIP_INDEX_URL": index, "PIP_EXTRA_INDEX_URL": "",
            "PIP_FIND_LINKS": "", "PIP_RETRIES": "0", "PIP_DEFAULT_TIMEOUT": "2"}
