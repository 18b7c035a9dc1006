#!/usr/bin/env python3
"""A Kubernetes API server that replays recorded responses, for the
k8s-monitor system test. Standard library only.

The script (JSON) says, per resource (pods, nodes, events) and per request
kind (list, watch), what the n-th request of that kind gets:

  {"file": "pods-list-100.json"}                   200, the file as the body
  {"status": 410, "file": "gone-200.json"}         that status, the file as the body
  {"file": "pods-watch-100.jsonl", "end": "drop"}  200, the file's lines as a chunked
        watch stream, one line per chunk; then "close" ends the stream as a
        watch's timeoutSeconds does, "drop" sends half a line and cuts the
        connection, "hang" (the default) keeps it open and silent.
  {..., "delay_s": 0.1}                            a watch's first line only after
        that long: what it records happened after what another watch sends
        first (the watches are separate connections, so without it either
        could reach the client first).

Once a kind's list is used up, lists repeat its last entry and watches hang.
Every request is logged as one JSON line: resource, watch, params, auth (the
bearer token matched --token), so the test can check resourceVersion resumes.
"""
import argparse
import json
import os
import re
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

PATH = re.compile(r"^/api/v1/(?:namespaces/[a-z0-9-]+/)?(pods|nodes|events)$")
DROP_FRAGMENT = b'{"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"na'


class Replay:
    def __init__(self, script, directory, log_path, token):
        with open(script) as f:
            self.script = json.load(f)
        self.dir = directory
        self.log = open(log_path, "a", buffering=1)
        self.token = token
        self.lock = threading.Lock()
        self.used = {}

    def next(self, resource, kind):
        with self.lock:
            entries = self.script.get(resource, {}).get(kind, [])
            n = self.used.get((resource, kind), 0)
            self.used[(resource, kind)] = n + 1
            if n < len(entries):
                return entries[n]
            if kind == "list" and entries:
                return entries[-1]
            return None

    def record(self, entry):
        with self.lock:
            self.log.write(json.dumps(entry, sort_keys=True) + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # the request log says it all
        pass

    def send_body(self, status, body):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def status(self, code, reason, message):
        body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": message, "reason": reason, "code": code}
        self.send_body(code, json.dumps(body).encode())

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def do_GET(self):
        replay = self.server.replay
        url = urlsplit(self.path)
        params = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        m = PATH.match(url.path)
        watch = params.get("watch") in ("1", "true")
        auth = self.headers.get("Authorization", "")
        authorized = not replay.token or auth == "Bearer " + replay.token
        replay.record({"path": url.path, "resource": m.group(1) if m else None,
                       "watch": watch, "params": params, "auth": authorized})
        if not authorized:
            return self.status(401, "Unauthorized", "Unauthorized")
        if not m:
            return self.status(404, "NotFound", "the server could not find the requested resource")
        entry = replay.next(m.group(1), "watch" if watch else "list")
        if entry is None and not watch:
            return self.status(404, "NotFound", "nothing recorded")
        if entry is not None and (entry.get("status", 200) != 200 or not watch):
            with open(os.path.join(replay.dir, entry["file"]), "rb") as f:
                return self.send_body(entry.get("status", 200), f.read())
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        end = "hang"
        if entry is not None:
            end = entry.get("end", "hang")
            time.sleep(entry.get("delay_s", 0))
            with open(os.path.join(replay.dir, entry["file"]), "rb") as f:
                for line in f:
                    self.chunk(line)
                    time.sleep(0.02)
        if end == "close":
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        elif end == "drop":
            self.chunk(DROP_FRAGMENT)
            self.close_connection = True
            self.connection.shutdown(2)
        else:
            while True:  # the client's timeout or the test's end closes it
                time.sleep(0.5)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--script", required=True)
    ap.add_argument("--dir", default=os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--log", required=True, help="request log (JSON lines)")
    ap.add_argument("--port-file", required=True, help="the port is written here once listening")
    ap.add_argument("--token", default="", help="bearer token required (none: any)")
    args = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.replay = Replay(args.script, args.dir, args.log, args.token)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(tmp, args.port_file)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # the test's cleanup: a clean stop
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
