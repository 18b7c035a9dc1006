#!/usr/bin/env python3
"""Reads kcat -f '%R%s' output (4-byte big-endian length, then a Confluent-framed
node_event) from stdin and prints one line per event:
    event_id kind pod_name pod_type job_uid node_name phase
decoding the Avro binary of schemas/node_event.avsc by hand (standard library only)."""
import struct
import sys


class Reader:
    def __init__(self, b):
        self.b, self.i = b, 0

    def long(self):
        shift = n = 0
        while True:
            c = self.b[self.i]
            self.i += 1
            n |= (c & 0x7F) << shift
            shift += 7
            if not c & 0x80:
                return (n >> 1) ^ -(n & 1)

    def str(self):
        n = self.long()
        s = self.b[self.i:self.i + n].decode()
        self.i += n
        return s

    def opt(self, read):
        return read() if self.long() == 1 else None


data = sys.stdin.buffer.read()
i = 0
while i < len(data):
    (n,) = struct.unpack(">i", data[i:i + 4])
    msg = data[i + 4:i + 4 + n]
    i += 4 + n
    assert msg[0] == 0, "not Confluent framing"
    r = Reader(msg[5:])
    ev_id, _t, job, kind, pod, ptype = r.str(), r.long(), r.str(), r.str(), r.str(), r.str()
    _idx, node, phase = r.long(), r.str(), r.opt(r.str)
    print(ev_id, kind, pod, ptype or "-", job, node or "-", phase or "-")
