"""Raw brain.Brain calls against dlbrain gateway, for what DLRover's own
code never sends: bad input, deadlines, load across two gateways.

Usage:
  calls.py bad ADDR               every bad input; prints "name status details"
  calls.py gone ADDR              an optimize call cancelled by its client
  calls.py optimize ADDR UID STAGE [TIMEOUT_S]
                                  one optimize call; prints status, success,
                                  reason, seconds, and the groups as JSON
  calls.py spread ADDR1,ADDR2 N   N jobs, each a create request on one gateway
                                  in turn; prints "ok N" when every call got a plan
"""

import json
import sys
import time

import grpc
from dlrover.proto import brain_pb2

PATH = "/brain.Brain/"


def raw_call(channel, method, payload, timeout=10):
    stub = channel.unary_unary(PATH + method, request_serializer=None,
                               response_deserializer=None)
    try:
        return grpc.StatusCode.OK, "", stub(payload, timeout=timeout)
    except grpc.RpcError as e:
        return e.code(), e.details(), None


def optimize(channel, uid, stage, timeout=10):
    req = brain_pb2.OptimizeRequest()
    req.type = stage
    req.config.data_store = "base_datastore"
    req.jobs.add().uid = uid
    t0 = time.monotonic()
    code, details, body = raw_call(channel, "optimize", req.SerializeToString(), timeout)
    secs = time.monotonic() - t0
    if code != grpc.StatusCode.OK:
        return code, details, None, secs
    resp = brain_pb2.OptimizeResponse.FromString(body)
    return code, details, resp, secs


def ld(field, payload):
    """A length-delimited protobuf field: bytes put as they are, UTF-8 or not
    (protobuf's Python API refuses to build a string that is not)."""
    n, v = len(payload), b""
    while True:
        b = n & 0x7F
        n >>= 7
        v += bytes([b | (0x80 if n else 0)])
        if not n:
            break
    return bytes([field << 3 | 2]) + v + payload


def bad(addr):
    ch = grpc.insecure_channel(addr)
    good = brain_pb2.JobMetrics()
    good.job_meta.uuid = "job-bad-1"
    good.metrics_type = brain_pb2.MetricsType.Type
    good.type = "ParameterServerStrategy"
    no_uid = brain_pb2.JobMetrics()
    no_uid.metrics_type = brain_pb2.MetricsType.Type
    no_uid.type = "x"
    mismatch = brain_pb2.JobMetrics()
    mismatch.job_meta.uuid = "job-bad-1"
    mismatch.metrics_type = brain_pb2.MetricsType.Model_Feature
    mismatch.type = "x"
    long_uid = brain_pb2.JobMetrics()
    long_uid.job_meta.uuid = "u" * 300
    long_uid.metrics_type = brain_pb2.MetricsType.Type
    long_uid.type = "x"
    bad_pod = brain_pb2.JobMetrics()
    bad_pod.job_meta.uuid = "job-bad-1"
    bad_pod.metrics_type = brain_pb2.MetricsType.Runtime_Info
    bad_pod.runtime_info.running_pods.add().pod_name = "not-a-dlrover-pod"
    unknown_stage = brain_pb2.OptimizeRequest()
    unknown_stage.type = "job_stage_lunch"
    unknown_stage.jobs.add().uid = "job-bad-1"
    no_job = brain_pb2.OptimizeRequest()
    no_job.type = "job_stage_create"
    # Bytes a consumer would send to the DLQ: a job uid that is not UTF-8
    # (JobMetrics.job_meta = 2, JobMeta.uuid = 1, metrics_type = 3, type = 11),
    # the same in a workflow feature's job name (workflow_feature = 5,
    # job_name = 1) and in an optimize call's job (OptimizeRequest.type = 1,
    # jobs = 3, OptimizeJobMeta.uid = 1), and a runtime sample dated ten days
    # ahead (beyond event.time.skew.s, a day).
    non_utf8_uid = ld(2, ld(1, b"job-bad-\xff\xfe")) + b"\x18\x07" + ld(11, b"x")
    non_utf8_name = (ld(2, ld(1, b"job-bad-1")) + b"\x18\x01" +
                     ld(5, ld(1, b"ctr-\xc3\x28")))
    non_utf8_job = ld(1, b"job_stage_create") + ld(3, ld(1, b"job-bad-\xed\xa0\x80"))
    future = brain_pb2.JobMetrics()
    future.job_meta.uuid = "job-bad-1"
    future.metrics_type = brain_pb2.MetricsType.Runtime_Info
    future.runtime_info.global_step = 10
    future.runtime_info.time_stamp = int(time.time()) + 10 * 86400
    cases = [
        ("malformed", "persist_metrics", b"\xff\xff\xff\xff"),
        ("non-utf8-uid", "persist_metrics", non_utf8_uid),
        ("non-utf8-name", "persist_metrics", non_utf8_name),
        ("non-utf8-optimize", "optimize", non_utf8_job),
        ("future-sample", "persist_metrics", future.SerializeToString()),
        ("malformed-optimize", "optimize", b"\x0a\x05ab"),
        ("no-uid", "persist_metrics", no_uid.SerializeToString()),
        ("type-mismatch", "persist_metrics", mismatch.SerializeToString()),
        ("long-uid", "persist_metrics", long_uid.SerializeToString()),
        ("bad-pod-name", "persist_metrics", bad_pod.SerializeToString()),
        ("unknown-stage", "optimize", unknown_stage.SerializeToString()),
        ("no-job", "optimize", no_job.SerializeToString()),
        ("no-job-uuid", "get_job_metrics", brain_pb2.JobMetricsRequest().SerializeToString()),
        ("unknown-method", "get_config", b""),
        ("oversized", "persist_metrics", b"\x0a" + b"\x80\x80\x80\x03" + b"x" * (6 << 20)),
        ("good", "persist_metrics", good.SerializeToString()),
    ]
    for name, method, payload in cases:
        code, details, _ = raw_call(ch, method, payload)
        print(name, code.name, details.replace("\n", " "))


def gone(addr):
    """A client that goes away before its answer (no deadline: it cancels)."""
    req = brain_pb2.OptimizeRequest()
    req.type = "job_stage_create"
    req.jobs.add().uid = "job-gone-1"
    stub = grpc.insecure_channel(addr).unary_unary(PATH + "optimize")
    fut = stub.future(req.SerializeToString())
    time.sleep(0.3)
    print("cancelled" if fut.cancel() else "answered first")


def one(addr, uid, stage, timeout):
    code, details, resp, secs = optimize(grpc.insecure_channel(addr), uid, stage, timeout)
    out = {"status": code.name, "details": details, "seconds": round(secs, 3)}
    if resp is not None:
        out["success"] = resp.response.success
        out["reason"] = resp.response.reason
        out["plans"] = len(resp.job_optimize_plans)
        if resp.job_optimize_plans:
            tg = resp.job_optimize_plans[0].resource.task_group_resources
            out["groups"] = {k: {"count": v.count, "cpu": v.resource.cpu,
                                 "memory": v.resource.memory} for k, v in sorted(tg.items())}
    print(json.dumps(out, sort_keys=True))


def spread(addrs, n):
    chans = [grpc.insecure_channel(a) for a in addrs.split(",")]
    failed = 0
    for k in range(n):
        code, details, resp, _ = optimize(chans[k % len(chans)], "job-spread-%d" % k,
                                          "job_stage_create")
        if code != grpc.StatusCode.OK or not resp.response.success:
            failed += 1
            print("call %d: %s %s %s" % (k, code.name, details, resp and resp.response.reason))
    print("ok %d" % (n - failed))


if __name__ == "__main__":
    if sys.argv[1] == "bad":
        bad(sys.argv[2])
    elif sys.argv[1] == "gone":
        gone(sys.argv[2])
    elif sys.argv[1] == "optimize":
        one(sys.argv[2], sys.argv[3], sys.argv[4],
            float(sys.argv[5]) if len(sys.argv) > 5 else 10)
    elif sys.argv[1] == "spread":
        spread(sys.argv[2], int(sys.argv[3]))
