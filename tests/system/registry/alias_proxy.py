"""A registry in front of `dlbrain registry` that also knows one more id.

    alias_proxy.py PORT UPSTREAM_URL EXTRA_ID CATALOG_ID

Forwards every request to UPSTREAM_URL (dlbrain's read-only endpoint) and
answers GET /schemas/ids/EXTRA_ID as /schemas/ids/CATALOG_ID: a platform
registry where another tool registered one of dlbrain's schemas under an id
of its own. PORT 0 picks one; the port is printed on the first line. The test
stops it (an outage) and starts it again on the same port.
"""
import http.server
import signal
import sys
import urllib.error
import urllib.request

PORT, UPSTREAM, EXTRA, ALIAS = int(sys.argv[1]), sys.argv[2].rstrip("/"), sys.argv[3], sys.argv[4]


class Handler(http.server.BaseHTTPRequestHandler):
    def _forward(self, body=None):
        path = self.path
        if path == f"/schemas/ids/{EXTRA}":
            path = f"/schemas/ids/{ALIAS}"
        req = urllib.request.Request(UPSTREAM + path, data=body, method=self.command)
        if self.headers.get("Content-Type"):
            req.add_header("Content-Type", self.headers["Content-Type"])
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                status, ctype, data = r.status, r.headers.get("Content-Type"), r.read()
        except urllib.error.HTTPError as e:
            status, ctype, data = e.code, e.headers.get("Content-Type"), e.read()
        self.send_response(status)
        if ctype:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._forward()

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        self._forward(self.rfile.read(n))

    def log_message(self, fmt, *args):
        sys.stderr.write("alias_proxy: " + fmt % args + "\n")


# Stopped with SIGTERM like the test's other servers, which must exit 0.
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
http.server.ThreadingHTTPServer.allow_reuse_address = True
server = http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
