#!/usr/bin/env python3
"""A TCP proxy in front of a Kafka broker that loses the answer to a commit
(tests/system/23-commit-unknown.sh): the broker commits the transaction, the
producer never hears so.

  kafka_proxy.py --listen PORT --upstream HOST:PORT --trigger-topic TOPIC
                 [--nth N] [--hold S]

Everything passes through untouched until the trigger: the Nth EndTxn
(commit) of a transaction that produced to TOPIC (an AddPartitionsToTxn or
Produce request naming it since the EndTxn before). That EndTxn is forwarded,
so the broker commits; from then on every producer connection is a black
hole: its requests go nowhere and nothing comes back, and it is held open. A
connection counts as a producer's from its first Produce, InitProducerId,
AddPartitionsToTxn, AddOffsetsToTxn, EndTxn or TxnOffsetCommit request, so a
new producer's connection falls in too, while a consumer's (Fetch,
OffsetFetch, JoinGroup, Heartbeat ...) keeps working and can ask the group's
committed offsets. The hole closes on SIGUSR1, or S seconds (default 120)
after the trigger: the held connections are closed, the clients connect
again and pass. One trigger per run. SIGTERM ends it with status 0.

Kafka's framing: a 4-byte big-endian size, then the request header (int16
api_key, int16 api_version, int32 correlation_id, nullable string client_id,
and tagged fields in flexible versions) and the body. Standard library only.
"""
import argparse
import asyncio
import signal
import struct
import sys
import time

# The api keys only a producer sends (Kafka protocol guide, "Api Keys").
PRODUCER_KEYS = {0: "Produce", 22: "InitProducerId", 24: "AddPartitionsToTxn",
                 25: "AddOffsetsToTxn", 26: "EndTxn", 28: "TxnOffsetCommit"}
PRODUCE, ADD_PARTITIONS, END_TXN = 0, 24, 26
# EndTxn is flexible (compact strings, tagged fields) from version 3 (KIP-482).
END_TXN_FLEXIBLE = 3
T0 = time.monotonic()


def log(msg):
    print(f"[{time.monotonic() - T0:8.3f}] kafka_proxy: {msg}", file=sys.stderr, flush=True)


def uvarint(b, i):
    """An unsigned varint at b[i:]: (value, next index)."""
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        if not c & 0x80:
            return v, i
        shift += 7


def end_txn_committed(body, version):
    """EndTxn's committed flag: body is the request after its size, header
    included. None when it cannot be read."""
    try:
        i = 8
        (n,) = struct.unpack_from(">h", body, i)  # client_id, a plain string in every header
        i += 2 + max(n, 0)
        if version >= END_TXN_FLEXIBLE:
            tags, i = uvarint(body, i)  # the header's tagged fields
            for _ in range(tags):
                _, i = uvarint(body, i)
                size, i = uvarint(body, i)
                i += size
            n, i = uvarint(body, i)  # transactional_id, a compact string: length + 1
            i += n - 1
        else:
            (n,) = struct.unpack_from(">h", body, i)
            i += 2 + n
        i += 8 + 2  # producer_id, producer_epoch
        return body[i] != 0
    except (IndexError, struct.error):
        return None


class Conn:
    count = 0

    def __init__(self, reader, writer):
        Conn.count += 1
        self.id = Conn.count
        self.client_r, self.client_w = reader, writer
        self.up_r = self.up_w = None
        self.producer = False  # sent a producer's request
        self.held = False      # in the black hole

    def close(self):
        for w in (self.client_w, self.up_w):
            if w is not None and not w.is_closing():
                w.close()


class Proxy:
    def __init__(self, a):
        self.a = a
        self.up_host, self.up_port = a.upstream.rsplit(":", 1)
        t = a.trigger_topic.encode()
        # The topic's name as a string (int16 length) or a compact string
        # (varint length + 1, one byte below 127): either way, with its
        # length, so "env.plans" does not match "env.plans-x".
        self.marks = [struct.pack(">h", len(t)) + t]
        if len(t) < 127:
            self.marks.append(bytes([len(t) + 1]) + t)
        self.conns = set()
        self.txn_has_topic = False
        self.seen = 0           # EndTxn commits of transactions with the topic
        self.state = "armed"    # -> "holding" -> "released"
        self.dropped_req = self.dropped_bytes = 0
        self.release_timer = None

    # ---- the hole -------------------------------------------------------------
    def hold(self, c):
        if not c.held:
            c.held = True
            log(f"conn {c.id}: producer connection held (nothing forwarded either way)")

    def trigger(self, c, corr):
        self.state = "holding"
        log(f"trigger: EndTxn commit #{self.seen} of a transaction with {self.a.trigger_topic} "
            f"(conn {c.id}, correlation id {corr}) forwarded to the broker; its answer and every "
            f"producer connection held until SIGUSR1 or {self.a.hold} s")
        for o in self.conns:
            if o.producer:
                self.hold(o)
        self.release_timer = asyncio.get_running_loop().call_later(self.a.hold, self.release,
                                                                   "hold time over")

    def release(self, why):
        if self.state != "holding":
            log(f"release ({why}) ignored: {self.state}")
            return
        self.state = "released"
        if self.release_timer:
            self.release_timer.cancel()
        held = [c for c in self.conns if c.held]
        log(f"released ({why}): {self.dropped_req} request(s) and {self.dropped_bytes} response "
            f"byte(s) dropped; closing {len(held)} held connection(s)")
        for c in held:
            c.close()

    # ---- pumps ----------------------------------------------------------------
    async def requests(self, c):
        """Client to broker, frame by frame."""
        while True:
            head = await c.client_r.readexactly(4)
            (size,) = struct.unpack(">i", head)
            body = await c.client_r.readexactly(size)
            if size < 8:
                c.up_w.write(head + body)
                continue
            key, ver, corr = struct.unpack_from(">hhi", body, 0)
            if key in PRODUCER_KEYS and not c.producer:
                c.producer = True
                log(f"conn {c.id}: a producer's ({PRODUCER_KEYS[key]} v{ver})")
            if c.producer and self.state == "holding":
                self.hold(c)
            if c.held:
                self.dropped_req += 1
                continue
            if key in (PRODUCE, ADD_PARTITIONS) and any(m in body for m in self.marks):
                self.txn_has_topic = True
            fire = False
            if key == END_TXN:
                committed = end_txn_committed(body, ver)
                if committed and self.txn_has_topic and self.state == "armed":
                    self.seen += 1
                    fire = self.seen == self.a.nth
                self.txn_has_topic = False
            c.up_w.write(head + body)
            await c.up_w.drain()
            if fire:
                self.trigger(c, corr)

    async def responses(self, c):
        """Broker to client, as it comes; nothing once held."""
        while True:
            data = await c.up_r.read(65536)
            if not data:
                return
            if c.held:
                self.dropped_bytes += len(data)
                continue
            c.client_w.write(data)
            await c.client_w.drain()

    async def serve(self, reader, writer):
        c = Conn(reader, writer)
        try:
            c.up_r, c.up_w = await asyncio.open_connection(self.up_host, int(self.up_port))
        except OSError as e:
            log(f"conn {c.id}: cannot reach {self.a.upstream}: {e}")
            writer.close()
            return
        self.conns.add(c)
        if self.state == "holding":
            log(f"conn {c.id}: new connection while holding (held once it acts as a producer)")
        tasks = [asyncio.create_task(self.requests(c)), asyncio.create_task(self.responses(c))]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            # A held connection stays open whoever hung up, until the release.
            while c.held and self.state == "holding" and not c.client_w.is_closing():
                if tasks[0] in done:  # the client hung up
                    break
                await asyncio.sleep(0.1)
        except asyncio.CancelledError:
            pass  # stopping
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            c.close()
            self.conns.discard(c)


async def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--listen", type=int, required=True, help="port on 127.0.0.1")
    ap.add_argument("--upstream", required=True, help="the broker's proxied listener, HOST:PORT")
    ap.add_argument("--trigger-topic", required=True)
    ap.add_argument("--nth", type=int, default=1)
    ap.add_argument("--hold", type=float, default=120.0)
    a = ap.parse_args()
    p = Proxy(a)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    loop.add_signal_handler(signal.SIGUSR1, p.release, "SIGUSR1")
    server = await asyncio.start_server(p.serve, "127.0.0.1", a.listen)
    log(f"listening on 127.0.0.1:{a.listen}, forwarding to {a.upstream}; trigger: EndTxn commit "
        f"#{a.nth} of a transaction with {a.trigger_topic}")
    await stop.wait()
    server.close()
    for c in list(p.conns):
        c.close()
    log(f"stopped: {Conn.count} connection(s) served, state {p.state}")


if __name__ == "__main__":
    asyncio.run(main())
