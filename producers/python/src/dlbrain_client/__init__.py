"""dlbrain's client for a job master (DLRover's master is Python).

Publish a job's events and requests to the pipeline, and subscribe to the plans
and configuration matches answering them, in the same Confluent-framed Avro as
the C side, byte for byte::

    from dlbrain_client import Reporter, PlanSubscriber

    with Reporter("127.0.0.1:9092", "job-1") as r, PlanSubscriber("127.0.0.1:9092", "job-1") as plans:
        r.report_job(meta={"name": "ctr", "scenario": "ctr"}, state="created")
        req = r.request_plan("job_stage_create")
        r.flush()
        plan = plans.wait_for(req, timeout=60)   # plan["groups"], plan["pods"], plan["actions"]
"""

from .catalog import TOPICS, Catalog, CatalogError, default_catalog
from .client import (
    ConfigSubscriber,
    DeliveryError,
    PlanSubscriber,
    Publisher,
    Reporter,
    Subscriber,
)
from .codec import DecodeError, decode, encode, from_json_line, normalize, peek, to_json_line
from .events import EventError
from .registry import RegistryBinding, RegistryError, RegistryUnavailable

__version__ = "0.1.0"

__all__ = [
    "Catalog",
    "CatalogError",
    "ConfigSubscriber",
    "DecodeError",
    "DeliveryError",
    "EventError",
    "PlanSubscriber",
    "Publisher",
    "RegistryBinding",
    "RegistryError",
    "RegistryUnavailable",
    "Reporter",
    "Subscriber",
    "TOPICS",
    "decode",
    "default_catalog",
    "encode",
    "from_json_line",
    "normalize",
    "peek",
    "to_json_line",
]
