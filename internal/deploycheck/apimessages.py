# Reads each JSON file (stdin: a JSON list of {"Kind": kind, "Path": path}, kind one of metric,
# policy, dashboard, service, slo) as the installed gcloud's own API message classes read it (apitools' JsonToMessage:
# Logging v2 LogMetric, Monitoring v3 AlertPolicy, Monitoring v1 Dashboard, Monitoring v3 Service
# and ServiceLevelObjective) and prints one JSON line per file:
# {"file": path, "unknown": [every field path, or enum value's field, the API does not define]}.
# GCLOUD_LIB is the SDK's lib folder.
import json, os, sys
root = os.environ["GCLOUD_LIB"]
sys.path.insert(0, root)
sys.path.insert(0, os.path.join(root, "third_party"))
import gcloud  # the launcher: fixes sys.path and the google package as gcloud does
gcloud._fix_google_module()
sys.path = gcloud.reorder_sys_path(sys.path)
from apitools.base.py import encoding
from apitools.base.protorpclite import messages
from googlecloudsdk.generated_clients.apis.logging.v2 import logging_v2_messages as logging_v2
from googlecloudsdk.generated_clients.apis.monitoring.v1 import monitoring_v1_messages as monitoring_v1
from googlecloudsdk.generated_clients.apis.monitoring.v3 import monitoring_v3_messages as monitoring_v3

CLASSES = {"metric": logging_v2.LogMetric, "policy": monitoring_v3.AlertPolicy, "dashboard": monitoring_v1.Dashboard,
           "service": monitoring_v3.Service, "slo": monitoring_v3.ServiceLevelObjective}

def unknown(msg, path):
    out = [path + "." + name for name in msg.all_unrecognized_fields()]
    for f in msg.all_fields():
        value = msg.get_assigned_value(f.name)
        for item in (value or []) if f.repeated else [value]:
            if isinstance(item, messages.Message):
                out += unknown(item, path + "." + f.name)
    return out

for file in json.load(sys.stdin):
    with open(file["Path"]) as f:
        message = encoding.JsonToMessage(CLASSES[file["Kind"]], f.read())
    print(json.dumps({"file": file["Path"], "unknown": unknown(message, "")}))
