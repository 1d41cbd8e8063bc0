"""`python -m fakejet.swarm start --swarm-port=N`: stands in for `ajet-swarm start` on a CPU.

Serves `GET /health` -> `{"status": "ok"}` as AgentJet's swarm server does, after a start-up
delay (`FAKESWARM_DELAY` seconds, like a model load), and can die (exit 1 with a real CUDA OOM
traceback) once a file `swarm_die` appears in the cwd (it is removed, so a restart lives on),
or never answer (`FAKESWARM_MUTE=1`). Every start is appended to `swarm_starts.log` in the cwd so tests can
count them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from fakejet.launcher import OOM


class Health(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path != "/health":
            self.send_error(404)
            return
        body = json.dumps({"status": "ok"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(prog="fakejet.swarm")
    parser.add_argument("action", choices=["start"])
    parser.add_argument("--swarm-port", type=int, default=10086)
    args = parser.parse_args()
    with open("swarm_starts.log", "a") as starts:
        starts.write(f"{args.swarm_port} {os.getpid()}\n")
    print(f"INFO: loading model for swarm server on port {args.swarm_port} ...", flush=True)
    time.sleep(float(os.environ.get("FAKESWARM_DELAY", "0")))
    if os.environ.get("FAKESWARM_MUTE") == "1":
        print("INFO: waiting for the trainer ...", flush=True)
        while True:
            time.sleep(3600)
    server = ThreadingHTTPServer(("127.0.0.1", args.swarm_port), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"INFO:     Uvicorn running on http://0.0.0.0:{args.swarm_port}", flush=True)
    die = Path("swarm_die")
    while not die.exists():
        time.sleep(0.05)
    die.unlink()
    print(OOM, flush=True)
    server.shutdown()
    return 1


if __name__ == "__main__":
    sys.exit(main())
