#!/usr/bin/env python3
"""DLRover's HTTP Brain client (http_brain_client.py, its schema exactly)
against `dlbrain gateway`'s HTTP Brain, as a master of DLRover's main branch
uses it with DLROVER_BRAIN_PROTOCOL=http.

  http_brain_check.py plans BASE_URL JOB OUT.json
      optimize at every stage the master asks, in its order, with what its
      glue sends (the stage, the job's uuid; no pods, no customized_config);
      every answer a plan (success true); the answers go to OUT.json.
  http_brain_check.py config BASE_URL OUT.json
      get_config for the jobs of tests/system/62-gateway-http.sh.
  http_brain_check.py no-plan BASE_URL JOB
      optimize answered 201 success=false, no resources (no plan in time).
  http_brain_check.py bad BASE_URL
      what a client gets for bad requests: the status and the field named.
  http_brain_check.py grpc GRPC_ADDR JOB STAGE
      the same optimize over gRPC (DLRover 0.6.1's brain_pb2): the groups as
      JSON on stdout, for comparison.
"""
import json
import sys

import requests

import http_brain_client as hb

STAGES = ["job_stage_create", "job_stage_worker_initial", "job_stage_ps_initial",
          "job_stage_ps_running", "job_stage_worker_running"]


def plans(base, job, out):
    c = hb.BrainClient(base)
    got = []
    for stage in STAGES:
        r = c.optimize(hb.OptimizeRequest(type=stage, job=hb.JobMeta(uuid=job)))
        assert r is not None, (stage, c.last_error)
        assert r.response.success, (stage, r.response.reason)
        assert r.job_opt_plan.job_meta.uuid == job, r.job_opt_plan.job_meta
        assert r.job_opt_plan.timestamp > 0, r.job_opt_plan
        got.append({"stage": stage, "reason": r.response.reason,
                    "groups": {k: v.model_dump() for k, v in
                               r.job_opt_plan.job_resource.node_group_resources.items()},
                    "pods": {k: v.model_dump() for k, v in
                             r.job_opt_plan.job_resource.node_resources.items()}})
    json.dump(got, open(out, "w"), indent=1)
    print(f"ok - {len(got)} stages optimized over HTTP: "
          + ", ".join(f"{g['stage']} {sorted(g['groups'])}" for g in got))


def config(base, out):
    c = hb.BrainClient(base)
    asks = {
        # attributes given in the request only
        "ana-c1": hb.JobMeta(user="ana", cluster="c1"),
        # a job dlbrain knows: group ads from its job events, the rest asked
        "known": hb.JobMeta(uuid="cfg-job-1", user="cy", cluster="c1"),
        # the same job, excluded user: ads-big (Exclude User bo) drops out
        "known-bo": hb.JobMeta(uuid="cfg-job-1", user="bo", cluster="c1"),
        # nothing at all: the rules without Include
        "empty": hb.JobMeta(),
    }
    got = {}
    for name, job in asks.items():
        r = c.get_config(hb.JobConfigRequest(type="", job=job))
        assert r is not None, (name, c.last_error)
        assert r.response.success, (name, r.response.reason)
        got[name] = {"reason": r.response.reason, "configs": r.job_configs}
    json.dump(got, open(out, "w"), indent=1)
    print("ok - get_config: " + "; ".join(f"{k} {v['configs']}" for k, v in got.items()))


def no_plan(base, job):
    c = hb.BrainClient(base)
    r = c.optimize(hb.OptimizeRequest(type="job_stage_create", job=hb.JobMeta(uuid=job)))
    assert r is not None, c.last_error
    assert not r.response.success, r
    assert "no plan for job_stage_create within" in r.response.reason, r.response.reason
    assert not r.job_opt_plan.job_resource.node_group_resources, r
    print(f"ok - no plan in time: 201, success false, \"{r.response.reason}\"")


def bad(base):
    big = b'{"type":"job_stage_create","job":{"uuid":"' + b"x" * 70000 + b'"}}'
    cases = [
        # (path, body, content type, status, detail contains)
        ("/optimize", b'{"type": "job_stage_create", "job": {"uuid": "j"', None, 400,
         "the body is not JSON: it breaks at line 1, column 48"),
        ("/optimize", b'{"type": "x"}\n{"type": "y"}', None, 400,
         "the body is not one JSON value: more follows at line 2, column 1"),
        ("/optimize", b"[1, 2]", None, 400, "the body: expected a JSON object, got an array"),
        ("/optimize", b"", None, 400, "the body is empty"),
        ("/optimize", b'{"type": "job_stage_create", "job": {"uuid": 7}}', None, 422,
         "job.uuid: expected a string, got a number"),
        ("/optimize", b'{"type": "job_stage_create", "job": {"uid": "j"}}', None, 422,
         "job.uid: not a field of job"),
        ("/optimize", b'{"type": "job_stage_create", "priority": 1}', None, 422,
         "priority: not a field of the request"),
        ("/optimize", b'{"type": "job_stage_create", "type": "job_stage_create"}', None, 422,
         "type: given twice"),
        ("/optimize", b'{"type": "job_stage_create", "job": {"uuid": null}}', None, 422,
         "job.uuid: expected a string, got null"),
        ("/optimize", b'{"type": "job_stage_create", "config": {"customized_config": {"k": 1}}}',
         None, 422, "config.customized_config.k: expected a string, got a number"),
        ("/optimize", b'{"type": "job_stage_create", "job": {"uuid": ""}}', None, 422,
         "job.uuid: missing"),
        ("/optimize", b'{"job": {"uuid": "j"}}', None, 422, "type: missing"),
        ("/optimize", b'{"type": "job_stage_create", "job": {"uuid": "' + b"u" * 200 + b'"}}',
         None, 422, "job.uuid: 200 bytes, at most 127"),
        ("/optimize", b'{"type": "job_stage_create", "job": {"uuid": "\xff"}}', None, 422,
         "job.uuid: not UTF-8"),
        ("/job_config", b'{"job": {"user": ["a"]}}', None, 422,
         "job.user: expected a string, got an array"),
        ("/job_config", b'{"job": {"user": "a"}, "config": {}}', None, 422,
         "config: not a field of the request"),
        ("/optimize", big, None, 413, "the body is larger than gateway.max.message.bytes (65536 bytes)"),
    ]
    for path, body, ctype, status, detail in cases:
        r = requests.post(base + path, data=body,
                          headers={"Content-Type": ctype or "application/json"}, timeout=10)
        assert r.status_code == status, (path, body[:80], r.status_code, r.text)
        assert r.headers.get("Content-Type") == "application/json", r.headers
        d = r.json()["detail"]
        assert detail in d, (path, body[:80], d)
    # chunked, no length given: read up to the limit, then refused
    r = requests.post(base + "/optimize", data=iter([big[:40000], big[40000:]]), timeout=10)
    assert r.status_code == 413, (r.status_code, r.text)
    r = requests.get(base + "/optimize", timeout=10)
    assert r.status_code == 405, r.status_code
    r = requests.post(base + "/plans", data=b"{}", timeout=10)
    assert r.status_code == 404 and "/optimize" in r.json()["detail"], r.text
    print(f"ok - {len(cases) + 3} bad requests refused with the status and the field or place named")


def grpc_groups(addr, job, stage):
    import grpc
    from dlrover.proto import brain_pb2, brain_pb2_grpc
    stub = brain_pb2_grpc.BrainStub(grpc.insecure_channel(addr))
    req = brain_pb2.OptimizeRequest(type=stage)
    req.jobs.add().uid = job
    r = stub.optimize(req, timeout=20)
    assert r.response.success, r.response.reason
    res = r.job_optimize_plans[0].resource
    print(json.dumps({k: {"count": v.count, "memory": v.resource.memory,
                          "cpu": float(f"{v.resource.cpu:.7g}")}
                      for k, v in res.task_group_resources.items()}, sort_keys=True))


if __name__ == "__main__":
    what, args = sys.argv[1], sys.argv[2:]
    {"plans": plans, "config": config, "no-plan": no_plan, "bad": bad,
     "grpc": grpc_groups}[what](*args)
