"""A client of DLRover's HTTP Brain that speaks exactly its schema.

DLRover's own HTTP client (dlrover/brain/python/client/client.py, class
BrainClient, on DLRover's main branch) is in no released package: PyPI's
newest dlrover is 0.6.1, which predates it (`pip download "dlrover>0.6.1"`:
"No matching distribution found"). So this module states what that client
does, from its facts, for the tests to run against `dlbrain gateway`:

- the models of dlrover/brain/python/common/job.py and http_schemas.py:
  the same field names, types and defaults (pydantic v2 BaseModel, which
  ignores unknown fields of an answer and coerces as pydantic does);
- a requests.Session whose http:// and https:// adapters retry 3 times with
  a backoff factor of 1 on 502, 503 and 504, POST included;
- optimize() and get_config() POST the request's model_dump() as JSON to
  <base_url>/optimize and <base_url>/job_config, raise_for_status(), and
  build the answer model from the JSON; any failure gives None.
"""
from typing import Dict, Optional

import requests
from pydantic import BaseModel, Field
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry


class NodeResource(BaseModel):
    memory: int = 0
    cpu: float = 0.0
    gpu: float = 0.0
    gpu_type: str = ""
    priority: int = 0


class NodeGroupResource(BaseModel):
    count: int = 0
    resource: NodeResource = NodeResource()


class JobResource(BaseModel):
    node_group_resources: Dict[str, NodeGroupResource] = Field(default_factory=dict)
    node_resources: Dict[str, NodeResource] = Field(default_factory=dict)


class JobMeta(BaseModel):
    uuid: str = ""
    cluster: str = ""
    namespace: str = ""
    user: str = ""
    app: str = ""


class JobOptimizePlan(BaseModel):
    timestamp: int = 0
    job_resource: JobResource = JobResource()
    job_meta: JobMeta = JobMeta()


class OptimizeConfig(BaseModel):
    optimizer_name: str = ""
    customized_config: Dict[str, str] = Field(default_factory=dict)


class Response(BaseModel):
    success: bool = False
    reason: str = ""


class OptimizeRequest(BaseModel):
    type: str = ""
    config: OptimizeConfig = Field(default_factory=OptimizeConfig)
    job: JobMeta = Field(default_factory=JobMeta)


class OptimizeResponse(BaseModel):
    response: Response = Field(default_factory=Response)
    job_opt_plan: JobOptimizePlan = Field(default_factory=JobOptimizePlan)


class JobConfigRequest(BaseModel):
    type: str = ""
    job: JobMeta = Field(default_factory=JobMeta)


class JobConfigResponse(BaseModel):
    response: Response = Field(default_factory=Response)
    job_configs: Dict[str, str] = Field(default_factory=dict)


class BrainClient:
    def __init__(self, base_url: str):
        self.base_url = base_url.rstrip("/")
        self.session = requests.Session()
        retry = Retry(total=3, backoff_factor=1, status_forcelist=[502, 503, 504],
                      allowed_methods=["HEAD", "GET", "OPTIONS", "POST"])
        for scheme in ("http://", "https://"):
            self.session.mount(scheme, HTTPAdapter(max_retries=retry))
        self.last_error = None

    def _post(self, path, request, answer_model):
        self.last_error = None
        try:
            r = self.session.post(self.base_url + path, json=request.model_dump())
            r.raise_for_status()
            return answer_model(**r.json())
        except requests.exceptions.HTTPError as e:
            self.last_error = f"HTTP {e.response.status_code}: {e.response.text}"
        except Exception as e:  # connection refused, retries exhausted, bad JSON
            self.last_error = repr(e)
        return None

    def optimize(self, request: OptimizeRequest) -> Optional[OptimizeResponse]:
        return self._post("/optimize", request, OptimizeResponse)

    def get_config(self, request: JobConfigRequest) -> Optional[JobConfigResponse]:
        return self._post("/job_config", request, JobConfigResponse)
