#!/usr/bin/env python3
"""Static checks of deploy/ (tests/system/07-deploy.sh runs it; no servers).

Every YAML under deploy/ parses; every Kubernetes object the manifests refer to
(ConfigMap, Secret and their keys, ServiceAccount, scale targets, ports) is
defined in deploy/k8s; every dlbrain container runs a real subcommand with real
settings (the binary itself loads each one's settings file, environment and
options) and only its role's credentials; a server's container port is the port
of the address it listens on (the gateway's grpc = gateway.address), and
Services and PodDisruptionBudgets select real pods and ports; RBAC only reads;
the autoscalers watch the consumers' real groups and input topics; the compose
file's references and ports resolve; the Dockerfile's COPY sources exist, it
exposes the default ports and the runtime packages cover the binary's libraries.

usage: deploy_check.py TOP DLBRAIN   (TOP: the repository, or a copy of it)
Prints one "ok - ..." line per area; exits 1 after naming every problem as
"FAIL - file: object: what".
"""
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

# The consumer lag gauge the HPA alternative scales on (hpa-alternative.yaml),
# and the pod label (as Prometheus names it) that tells the consumers apart.
LAG_METRIC = "dlbrain_kafka_consumer_lag"
ROLE_LABEL = "app.kubernetes.io/component"
# Roles that consume, and the C file that names their input topics.
CONSUMER_SOURCES = {
    "optimizer": "consumers/optimizer/consumer.c",
    "configurer": "consumers/configurer/configurer.c",
}
# Long-running commands with -D (print the effective settings and exit).
DUMP_COMMANDS = {"optimizer", "configurer", "relay", "k8s-monitor", "gateway"}
# Roles that serve more than the metrics port, each server: the C file that
# listens, the setting it listens on, the name its container port must have,
# and how it listens (grpc: gRPC's server, which tells whether it speaks
# plaintext HTTP/2; httpd: the HTTP/1.1 front of pipeline/base/httpd.c). The
# file must listen on that setting (through the conf field pipeline/base/conf.c
# gives it). The first server is the one a startup probe waits for.
SERVER_SOURCES = {"gateway": [("producers/gateway/gateway.c", "gateway.address", "grpc", "grpc"),
                              ("producers/gateway/gw_http.c", "gateway.http.address", "http",
                               "httpd")]}
# Service appProtocol of a plaintext HTTP/2 port: prior knowledge over
# cleartext, as gRPC's insecure channels speak it (Kubernetes' own name).
H2C = "kubernetes.io/h2c"
# The credentials (*_FILE variables) each long-running role reads, no more, no
# fewer: the consumers' stream keeps job state in PostgreSQL and Redis; the
# relay, config watch and the gateway (get_job_metrics) use PostgreSQL only;
# the monitor neither. A pod gets only the keys its role uses.
ROLE_CREDENTIALS = {
    "optimizer": {"DLBRAIN_PG_DSN_FILE", "DLBRAIN_REDIS_PASSWORD_FILE"},
    "configurer": {"DLBRAIN_PG_DSN_FILE", "DLBRAIN_REDIS_PASSWORD_FILE"},
    "relay": {"DLBRAIN_PG_DSN_FILE"},
    "config watch": {"DLBRAIN_PG_DSN_FILE"},
    "k8s-monitor": set(),
    "gateway": {"DLBRAIN_PG_DSN_FILE"},
}
READ_VERBS = {"get", "list", "watch"}
# The one place of what the topics Job and the autoscalers repeat otherwise:
# a ConfigMap of DLBRAIN_* variables every dlbrain container reads (envFrom),
# which the topics Job reads too and the kustomization writes into KEDA.
CLUSTER_CM = "dlbrain-cluster"
CLUSTER_KEYS = ("env", "brokers", "topic.partitions", "topic.replication")
DLBRAIN_IMAGE = "dlbrain"
# Packages of the debian:12-slim base image the runtime stage need not list.
BASE_PACKAGES = {"libc6", "libgcc-s1", "zlib1g"}

problems = []


def fail(where, what):
    problems.append(f"{where}: {what}")


def run(cmd, env=None, cwd=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
    return r.returncode, r.stdout, r.stderr


class Repo:
    """What the code says: commands, settings, topics, each role's inputs."""

    def __init__(self, top, dlbrain):
        self.top, self.dlbrain = top, dlbrain
        rc, out, err = run([dlbrain, "--help"])
        sect = out.split("commands:", 1)[1].split("\n\n", 1)[0]
        self.commands = {ln.split()[0] for ln in sect.splitlines() if ln.strip()}
        rc, out, err = run([dlbrain, "config", "--help"])
        sect = out.split("actions:", 1)[1].split("\n\n", 1)[0]
        self.config_actions = {ln.split()[0] for ln in sect.splitlines() if ln.startswith("  ")}
        rc, out, err = run([dlbrain, "settings", "--reference"])
        if rc:
            sys.exit(f"FAIL - {dlbrain} settings --reference: {err.strip()}")
        self.settings = {}  # key -> (default, env var)
        for m in re.finditer(r"^\| `([^`]+)` \| `([^`]*)` \| `([^`]+)` \|", out, re.M):
            default = "" if m.group(2) == '""' else m.group(2)
            self.settings[m.group(1)] = (default, m.group(3))
        self.env_vars = {v[1]: k for k, v in self.settings.items()}
        self.file_vars = {}  # *_FILE variables the binary knows: found by trying it
        conf_h = self.read("pipeline/base/conf.h")
        macros = dict(re.findall(r'#define\s+(DLB_TOPIC_\w+)\s+"([^"]+)"', conf_h))
        kafka_c = self.read("pipeline/stream/kafka.c")
        m = re.search(r"dlb_kafka_pipeline_topics\[\]\s*=\s*\{(.*?)\};", kafka_c, re.S)
        self.topics = [macros[t] for t in re.findall(r"DLB_TOPIC_\w+", m.group(1))]
        self.inputs = {}
        for role, path in CONSUMER_SOURCES.items():
            m = re.search(r"inputs\[\]\s*=\s*\{(.*?)\}", self.read(path), re.S)
            self.inputs[role] = [macros[t] for t in re.findall(r"DLB_TOPIC_\w+", m.group(1))]
        # role -> [(setting, container port name, Service appProtocol or None)]
        self.servers = {}
        conf_c = self.read("pipeline/base/conf.c")
        for role, servers in SERVER_SOURCES.items():
            for path, key, pname, how in servers:
                m = re.search(r'\{"' + re.escape(key) + r'",\s*K_\w+,\s*[FN]\(([\w.]+)\)', conf_c)
                src = self.read(path)
                field = r"conf->" + re.escape(m.group(1)) + r"\b" if m else None
                listens = field and (re.search(r"grpc_server_add_http2_port\([^;]*" + field, src)
                                     if how == "grpc" else
                                     re.search(field, src) and "dlb_httpd_start(" in src)
                if not listens:
                    sys.exit(f"FAIL - {path}: does not listen on {key}: SERVER_SOURCES is out of date")
                plain = how == "grpc" and "grpc_insecure_server_credentials_create" in src
                self.servers.setdefault(role, []).append((key, pname, H2C if plain else None))

    def served_ports(self, role, dump):
        """{container port: (name, setting)} a role serves, as its -D output
        (key=value lines) says: metrics.port, and its server's address."""
        out = {}
        if dump.get("metrics.port", "").lstrip("-").isdigit() and int(dump["metrics.port"]) > 0:
            out[int(dump["metrics.port"])] = ("metrics", "metrics.port")
        for key, pname, _ in self.servers.get(role, []):
            port = dump.get(key, "").rpartition(":")[2]
            if port.isdigit():
                out[int(port)] = (pname, key)
        return out

    def read(self, rel):
        with open(os.path.join(self.top, rel), encoding="utf-8") as f:
            return f.read()

    def is_env_var(self, name):
        """A DLBRAIN_* variable the binary reads: a setting's, or a *_FILE one
        (the binary fails naming the variable when its file is missing)."""
        if name in self.env_vars:
            return True
        if not name.endswith("_FILE"):
            return False
        if name not in self.file_vars:
            env = clean_env()
            env[name] = "/nonexistent/dlb-deploy-check"
            rc, out, err = run([self.dlbrain, "settings"], env=env)
            self.file_vars[name] = rc != 0 and name in err
        return self.file_vars[name]


def clean_env():
    return {k: v for k, v in os.environ.items() if not k.startswith(("DLBRAIN_", "PG", "KUBE"))}


def parse_settings(text):
    """A -c file as dlb_conf_load_file reads it: key=value, # comments."""
    out = {}
    for ln in text.splitlines():
        ln = ln.strip()
        if ln and not ln.startswith("#") and "=" in ln:
            k, v = ln.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def load_yaml_files(top):
    docs = {}  # relative path -> [documents]
    for root, dirs, files in os.walk(os.path.join(top, "deploy")):
        dirs.sort()
        for f in sorted(files):
            if f.endswith((".yaml", ".yml")):
                path = os.path.join(root, f)
                rel = os.path.relpath(path, top)
                try:
                    with open(path, encoding="utf-8") as fh:
                        docs[rel] = [d for d in yaml.safe_load_all(fh) if d is not None]
                except yaml.YAMLError as e:
                    fail(rel, f"not valid YAML: {e}")
    return docs


# ---- Kubernetes manifests ----------------------------------------------------


class Manifests:
    def __init__(self, repo, docs):
        self.repo = repo
        self.objs = {}  # (kind, name) -> (file, object)
        self.files = {}
        for rel, ds in docs.items():
            if not rel.startswith("deploy/k8s/") or rel.endswith("kustomization.yaml"):
                continue
            self.files[rel] = ds
            for d in ds:
                if not isinstance(d, dict) or "kind" not in d or "apiVersion" not in d:
                    fail(rel, "a document without kind/apiVersion")
                    continue
                key = (d["kind"], d.get("metadata", {}).get("name"))
                if not key[1]:
                    fail(rel, f"a {d['kind']} without metadata.name")
                if key in self.objs:
                    fail(rel, f"{key[0]} {key[1]} is defined twice (also in {self.objs[key][0]})")
                self.objs[key] = (rel, d)
        cm = self.get("ConfigMap", "dlbrain-settings")
        if not cm or "dlbrain.conf" not in cm.get("data", {}):
            fail("deploy/k8s", "no ConfigMap dlbrain-settings with a dlbrain.conf key")
            self.settings = {}
        else:
            self.settings = parse_settings(cm["data"]["dlbrain.conf"])
        self.cluster = {}  # setting key -> value, from dlbrain-cluster's variables
        cc = self.get("ConfigMap", CLUSTER_CM)
        where = f"{self.objs[('ConfigMap', CLUSTER_CM)][0]}: ConfigMap {CLUSTER_CM}" if cc else "deploy/k8s"
        if not cc:
            fail(where, f"no ConfigMap {CLUSTER_CM}: the environment, brokers and topics' shape, once")
        else:
            for var, v in (cc.get("data") or {}).items():
                key = repo.env_vars.get(var)
                if not key:
                    fail(where, f"key {var}: not the variable of a dlbrain setting (dlbrain settings --reference)")
                else:
                    self.cluster[key] = str(v)
            for key in CLUSTER_KEYS:
                if key not in self.cluster:
                    fail(where, f"no {repo.settings[key][1]} ({key}): the topics Job and KEDA need it")

    def get(self, kind, name):
        o = self.objs.get((kind, name))
        return o[1] if o else None

    def setting(self, key):
        """As a dlbrain container sees it: dlbrain-cluster's variable, else the
        settings file, else the default."""
        if key in self.cluster:
            return self.cluster[key]
        return self.settings.get(key, self.repo.settings[key][0])

    def data_keys(self, kind, name):
        o = self.get(kind, name) or {}
        return set(o.get("data", {}) or {}) | set(o.get("stringData", {}) or {}) | set(
            o.get("binaryData", {}) or {})


def check_settings_file(where, settings, repo):
    for k in settings:
        if k not in repo.settings:
            fail(where, f"settings key {k!r} is not a dlbrain setting (dlbrain settings --reference)")


def prom_label(label):
    """A Kubernetes label as Prometheus' kubernetes_sd relabelling names it."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", label)


def volume_source(vol):
    if "configMap" in vol:
        return "ConfigMap", vol["configMap"].get("name")
    if "secret" in vol:
        return "Secret", vol["secret"].get("secretName")
    return None, None


def resolve_path(path, mounts, vols, m):
    """Which object key a path in the container is: (kind, name, key) or
    (kind, name, None) for a whole-directory mount, or None."""
    for vm in sorted(mounts, key=lambda x: -len(x.get("mountPath", ""))):
        mp = vm.get("mountPath", "").rstrip("/")
        kind, name = volume_source(vols.get(vm.get("name"), {}))
        if not kind:
            continue
        if vm.get("subPath"):
            if path == mp:
                return kind, name, vm["subPath"]
        elif path == mp:
            return kind, name, None
        elif path.startswith(mp + "/"):
            return kind, name, path[len(mp) + 1:]
    return None


def check_pod(rel, owner, tmpl, m, long_running):
    repo = m.repo
    spec = tmpl.get("spec", {})
    labels = tmpl.get("metadata", {}).get("labels", {})
    where = f"{rel}: {owner}"
    sa = spec.get("serviceAccountName")
    if sa and not m.get("ServiceAccount", sa):
        fail(where, f"serviceAccountName {sa}: no ServiceAccount {sa} in deploy/k8s")
    vols = {}
    for v in spec.get("volumes", []):
        vols[v["name"]] = v
        kind, name = volume_source(v)
        if kind and not m.get(kind, name):
            fail(where, f"volume {v['name']}: no {kind} {name} in deploy/k8s")
        for it in (v.get("configMap") or v.get("secret") or {}).get("items", []):
            if it["key"] not in m.data_keys(kind, name):
                fail(where, f"volume {v['name']}: {kind} {name} has no key {it['key']}")
    for tsc in spec.get("topologySpreadConstraints", []):
        ml = (tsc.get("labelSelector") or {}).get("matchLabels") or {}
        if not ml or any(labels.get(k) != v for k, v in ml.items()):
            fail(where, f"topologySpreadConstraints labelSelector {ml}: not this template's pods")
    psc = spec.get("securityContext", {})
    if long_running and spec.get("terminationGracePeriodSeconds", 30) < 30:
        fail(where, "terminationGracePeriodSeconds below 30: no time to finish a batch")
    for c in spec.get("initContainers", []) + spec.get("containers", []):
        cw = f"{where}: container {c['name']}"
        ports = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}
        res = c.get("resources", {})
        for part in ("requests", "limits"):
            for r in ("cpu", "memory"):
                if r not in res.get(part, {}):
                    fail(cw, f"no resources.{part}.{r}")
        sc = c.get("securityContext", {})
        if not (sc.get("runAsNonRoot", psc.get("runAsNonRoot")) is True):
            fail(cw, "runAsNonRoot is not true")
        if sc.get("readOnlyRootFilesystem") is not True:
            fail(cw, "readOnlyRootFilesystem is not true")
        if sc.get("allowPrivilegeEscalation") is not False:
            fail(cw, "allowPrivilegeEscalation is not false")
        if "ALL" not in sc.get("capabilities", {}).get("drop", []):
            fail(cw, "capabilities do not drop ALL")
        mounts = c.get("volumeMounts", [])
        for vm in mounts:
            v = vols.get(vm["name"])
            if v is None:
                fail(cw, f"volumeMount {vm['name']}: no such volume")
                continue
            kind, name = volume_source(v)
            if kind and vm.get("subPath") and vm["subPath"] not in m.data_keys(kind, name):
                fail(cw, f"volumeMount {vm['name']}: {kind} {name} has no key {vm['subPath']}")
        for e in c.get("env", []):
            ref = (e.get("valueFrom") or {})
            for rk, kind in (("configMapKeyRef", "ConfigMap"), ("secretKeyRef", "Secret")):
                if rk in ref:
                    n, k = ref[rk].get("name"), ref[rk].get("key")
                    if not m.get(kind, n):
                        fail(cw, f"env {e['name']}: no {kind} {n} in deploy/k8s")
                    elif k not in m.data_keys(kind, n):
                        fail(cw, f"env {e['name']}: {kind} {n} has no key {k}")
        for ef in c.get("envFrom") or []:
            for rk, kind in (("configMapRef", "ConfigMap"), ("secretRef", "Secret")):
                if rk in ef and not m.get(kind, ef[rk].get("name")):
                    fail(cw, f"envFrom: no {kind} {ef[rk].get('name')} in deploy/k8s")
        for pname in ("startupProbe", "livenessProbe", "readinessProbe"):
            for how in ("httpGet", "tcpSocket", "grpc"):
                hg = (c.get(pname) or {}).get(how)
                if hg and isinstance(hg.get("port"), str) and hg["port"] not in ports:
                    fail(cw, f"{pname} port {hg['port']!r} is not a declared container port")
        image = c.get("image", "")
        if image.split(":")[0].split("/")[-1] == DLBRAIN_IMAGE:
            check_dlbrain_container(cw, c, ports, mounts, vols, m, long_running,
                                    tmpl.get("metadata", {}).get("annotations", {}))
    return labels


def check_dlbrain_container(cw, c, ports, mounts, vols, m, long_running, annotations):
    repo = m.repo
    if c.get("command"):
        fail(cw, "command is set: the image's ENTRYPOINT is dlbrain, give args only")
    args = [str(a) for a in c.get("args", [])]
    if not args or args[0] not in repo.commands:
        fail(cw, f"args {args} do not start with a dlbrain command ({', '.join(sorted(repo.commands))})")
        return
    if args[0] == "config" and (len(args) < 2 or args[1] not in repo.config_actions):
        fail(cw, f"args {args}: not a 'dlbrain config' action")
        return
    conf_file, i = None, 1
    while i < len(args):
        a = args[i]
        if a in ("-c", "--config") and i + 1 < len(args):
            conf_file = args[i + 1]
        elif a == "-X" and i + 1 < len(args):
            k = args[i + 1].split("=", 1)[0]
            if k not in repo.settings:
                fail(cw, f"-X {k}: not a dlbrain setting")
        if re.search(r"password=|passwd", a, re.I):
            fail(cw, "a credential in args: use a *_FILE variable and the Secret")
        i += 1
    if long_running:
        if ports.get("metrics") != int(m.setting("metrics.port")):
            fail(cw, f"no container port named metrics = metrics.port ({m.setting('metrics.port')})")
        probes = {p: (c.get(p) or {}).get("httpGet", {}) for p in ("livenessProbe", "readinessProbe")}
        if probes["livenessProbe"].get("path") != "/healthz" or probes["livenessProbe"].get("port") != "metrics":
            fail(cw, "livenessProbe is not httpGet /healthz on port metrics")
        if probes["readinessProbe"].get("path") != "/readyz" or probes["readinessProbe"].get("port") != "metrics":
            fail(cw, "readinessProbe is not httpGet /readyz on port metrics")
        if annotations.get("prometheus.io/scrape") == "true" and \
                annotations.get("prometheus.io/port") != str(ports.get("metrics")):
            fail(cw, "prometheus.io/port is not the metrics port")
        role = " ".join(args[:2]) if args[0] == "config" else args[0]
        if role in ROLE_CREDENTIALS:
            want = ROLE_CREDENTIALS[role]
            have = {e["name"] for e in c.get("env", [])
                    if e["name"].startswith("DLBRAIN_") and e["name"].endswith("_FILE")}
            for n in sorted(have - want):
                fail(cw, f"env {n}: a credential the {role} never reads (give a pod only its role's)")
            for n in sorted(want - have):
                fail(cw, f"no env {n}: the {role} needs that credential")
        if args[0] in repo.servers:
            key, pname, _ = repo.servers[args[0]][0]
            sp = (c.get("startupProbe") or {}).get("tcpSocket") or {}
            if sp.get("port") != pname:
                fail(cw, f"startupProbe is not tcpSocket on port {pname}: /readyz may say ok before "
                         f"{key} listens, and a pod must not get calls before it serves")
    # The container's files, laid out in a sandbox, and the binary run on them.
    sandbox = tempfile.mkdtemp(prefix="dlb-deploy-check.")
    try:

        def place(path):
            r = resolve_path(path, mounts, vols, m)
            if not r:
                return None
            kind, name, key = r
            obj = m.get(kind, name) or {}
            data = dict(obj.get("data") or {}, **(obj.get("stringData") or {}))
            dst = os.path.join(sandbox, path.lstrip("/"))
            if key is None:
                os.makedirs(dst, exist_ok=True)
                for k, v in data.items():
                    with open(os.path.join(dst, k), "w") as f:
                        f.write(v)
            elif key in data:
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                with open(dst, "w") as f:
                    f.write(data[key])
            else:
                return None
            return dst

        env = clean_env()
        # Variables of envFrom ConfigMaps first: env entries win over them.
        refs = [(ef.get("configMapRef") or {}).get("name") for ef in c.get("envFrom") or []]
        if CLUSTER_CM not in refs:
            fail(cw, f"does not read ConfigMap {CLUSTER_CM} (envFrom): it would run with another "
                     "environment or brokers than the topics Job and the autoscalers")
        for ref in refs:
            for n, v in ((m.get("ConfigMap", ref) or {}).get("data") or {}).items():
                if n.startswith("DLBRAIN_") and repo.is_env_var(n):
                    env[n] = str(v)
        for e in c.get("env", []):
            n = e["name"]
            if not n.startswith("DLBRAIN_"):
                continue
            if not repo.is_env_var(n):
                fail(cw, f"env {n}: dlbrain reads no such variable")
                continue
            if "value" in e:
                v = str(e["value"])
                if n.endswith("_FILE"):
                    r = resolve_path(v, mounts, vols, m)
                    if not r or r[0] != "Secret" or r[2] is None:
                        fail(cw, f"env {n}={v}: not a key of a mounted Secret")
                        continue
                    if r[2] not in m.data_keys("Secret", r[1]):
                        fail(cw, f"env {n}={v}: Secret {r[1]} has no key {r[2]}")
                        continue
                    v = place(v)
                elif re.search(r"password", v, re.I):
                    fail(cw, f"env {n}: a credential in the environment: use {n}_FILE")
                env[n] = v
        cmd = [repo.dlbrain]
        if args[0] in DUMP_COMMANDS:
            cmd += args + ["-D"]
        else:
            cmd += ["settings"]
        if conf_file:
            local = place(conf_file)
            if not local:
                fail(cw, f"-c {conf_file}: not a key of a mounted ConfigMap or Secret")
                return
            kind = resolve_path(conf_file, mounts, vols, m)
            text = open(local).read()
            check_settings_file(f"{cw}: -c {conf_file} ({kind[0]} {kind[1]})", parse_settings(text), repo)
            cmd = [local if a == conf_file else a for a in cmd]
            if cmd[1] == "settings":
                cmd += ["-c", local]
        if args[:2] == ["config", "watch"]:
            dirs = [a for a in args[2:] if a.startswith("/") and a != conf_file]
            r = resolve_path(dirs[0], mounts, vols, m) if dirs else None
            if not r or r[0] != "ConfigMap" or r[2] is not None:
                fail(cw, f"config watch {dirs[:1]}: not a directory mount of a ConfigMap "
                         "(a subPath mount never updates)")
        rc, out, err = run(cmd, env=env)
        if rc != 0:
            fail(cw, f"dlbrain refuses the container's settings: {' '.join(cmd[1:])}: {err.strip()}")
        elif long_running and args[0] in repo.servers and args[0] in DUMP_COMMANDS:
            # Each server's port as the binary itself resolves it (settings
            # file, environment, -X and command options), declared by name.
            for key, pname, _ in repo.servers[args[0]]:
                addr = parse_settings(out).get(key, "")
                host, _, port = addr.rpartition(":")
                if not port.isdigit() or int(port) == 0:
                    fail(cw, f"{key} {addr}: no fixed port for a Service to reach")
                elif ports.get(pname) != int(port):
                    fail(cw, f"no container port named {pname} = the port of {key} {addr}")
                if host.strip("[]") not in ("0.0.0.0", "::", ""):
                    fail(cw, f"{key} {addr}: listens on {host} only, not on the pod's IP "
                             "(the Service and the kubelet come to that)")
    finally:
        shutil.rmtree(sandbox, ignore_errors=True)


def selected(sel, pods):
    """The Deployments whose pods a label selector (matchLabels) selects."""
    return [n for n, (lb, _) in pods.items() if sel and all(lb.get(k) == v for k, v in sel.items())]


def check_k8s(repo, docs, top, kubectl):
    m = Manifests(repo, docs)
    check_settings_file("deploy/k8s/settings.yaml: ConfigMap dlbrain-settings", m.settings, repo)
    for k in sorted(set(m.settings) & set(m.cluster)):
        fail("deploy/k8s/settings.yaml: ConfigMap dlbrain-settings",
             f"{k} is set in ConfigMap {CLUSTER_CM} too ({repo.settings[k][1]}, which wins): "
             "keep it in one place")
    env = m.setting("env")
    partitions = int(m.setting("topic.partitions"))
    pods = {}  # Deployment name -> (labels, template)
    for (kind, name), (rel, o) in sorted(m.objs.items()):
        if kind in ("Deployment", "Job"):
            tmpl = o.get("spec", {}).get("template", {})
            labels = check_pod(rel, f"{kind} {name}", tmpl, m, kind == "Deployment")
            sel = o.get("spec", {}).get("selector", {}).get("matchLabels", {})
            if kind == "Deployment":
                if not sel or any(labels.get(k) != v for k, v in sel.items()):
                    fail(f"{rel}: {kind} {name}", "selector.matchLabels do not match the pod labels")
                pods[name] = (labels, tmpl)
        elif kind in ("Role", "ClusterRole"):
            for rule in o.get("rules", []):
                bad = set(rule.get("verbs", [])) - READ_VERBS
                if bad:
                    fail(f"{rel}: {kind} {name}", f"verbs {sorted(bad)}: dlbrain only reads (get, list, watch)")
        elif kind in ("RoleBinding", "ClusterRoleBinding"):
            rr = o.get("roleRef", {})
            if not m.get(rr.get("kind"), rr.get("name")):
                fail(f"{rel}: {kind} {name}", f"roleRef {rr.get('kind')} {rr.get('name')} is not in deploy/k8s")
            for s in o.get("subjects", []):
                if s.get("kind") == "ServiceAccount" and not m.get("ServiceAccount", s.get("name")):
                    fail(f"{rel}: {kind} {name}", f"subject ServiceAccount {s.get('name')} is not in deploy/k8s")

    def role_of(target, where):
        if target not in pods:
            fail(where, f"scaleTargetRef {target}: no Deployment {target} in deploy/k8s")
            return None
        c = pods[target][1]["spec"]["containers"][0]
        role = str((c.get("args") or [""])[0])
        if role not in repo.inputs:
            fail(where, f"scales {target}, which runs {role!r}, not a consumer ({', '.join(repo.inputs)})")
            return None
        return role

    for (kind, name), (rel, o) in sorted(m.objs.items()):
        where = f"{rel}: {kind} {name}"
        spec = o.get("spec", {})
        if kind == "ScaledObject":
            role = role_of(spec.get("scaleTargetRef", {}).get("name"), where)
            if int(spec.get("maxReplicaCount", 100)) > partitions:
                fail(where, f"maxReplicaCount {spec.get('maxReplicaCount')} > topic.partitions {partitions}")
            if not role:
                continue
            for t in spec.get("triggers", []):
                md = t.get("metadata", {})
                if t.get("type") != "kafka":
                    continue
                # The part before the first dot and the brokers are the
                # kustomization's replacements' (check_replacements).
                group = str(md.get("consumerGroup", ""))
                if group.partition(".")[2] != role:
                    fail(where, f"consumerGroup {group!r}: the {role}'s group is <env>.{role}")
                topic = str(md.get("topic", ""))
                short = topic.partition(".")[2]
                if short not in repo.topics:
                    fail(where, f"topic {topic!r} is not <env>.<one of the pipeline's topics>")
                elif short not in repo.inputs[role]:
                    fail(where, f"topic {topic!r} is not an input of the {role}")
                if not str(md.get("lagThreshold", "")).isdigit():
                    fail(where, "lagThreshold is not a positive integer")
        elif kind == "HorizontalPodAutoscaler":
            ref = spec.get("scaleTargetRef", {})
            if ref.get("kind") != "Deployment":
                fail(where, "scaleTargetRef is not a Deployment")
            role = role_of(ref.get("name"), where)
            if int(spec.get("maxReplicas", 0)) > partitions:
                fail(where, f"maxReplicas {spec.get('maxReplicas')} > topic.partitions {partitions}")
            for mt in spec.get("metrics", []):
                ext = mt.get("external", {})
                metric = ext.get("metric", {})
                if metric.get("name") != LAG_METRIC:
                    fail(where, f"metric {metric.get('name')!r} is not {LAG_METRIC}")
                want = pods[ref.get("name")][0].get(ROLE_LABEL) if role else None
                got = metric.get("selector", {}).get("matchLabels", {}).get(prom_label(ROLE_LABEL))
                if role and got != want:
                    fail(where, f"metric selector {prom_label(ROLE_LABEL)}={got!r}: the pods of "
                                f"{ref.get('name')} have {ROLE_LABEL}={want!r}")
        elif kind == "PodMonitor":
            sel = spec.get("selector", {}).get("matchLabels", {})
            hit = [n for n, (lb, _) in pods.items() if all(lb.get(k) == v for k, v in sel.items())]
            if not hit:
                fail(where, "selector matches no Deployment's pods")
            if ROLE_LABEL not in spec.get("podTargetLabels", []):
                fail(where, f"podTargetLabels lack {ROLE_LABEL} (the HPA alternative selects on it)")
            for ep in spec.get("podMetricsEndpoints", []):
                for n in hit:
                    cs = pods[n][1]["spec"]["containers"]
                    if not any(p.get("name") == ep.get("port") for c in cs for p in c.get("ports", [])):
                        fail(where, f"port {ep.get('port')!r} is not declared by Deployment {n}")
        elif kind == "Service":
            if spec.get("type", "ClusterIP") != "ClusterIP":
                fail(where, f"type {spec.get('type')}: dlbrain serves plaintext without authentication; "
                            "keep it inside the cluster (ClusterIP)")
            sel = spec.get("selector") or {}
            hit = selected(sel, pods)
            if not hit:
                fail(where, f"selector {sel} matches no Deployment's pods")
            for sp in spec.get("ports", []):
                tp = sp.get("targetPort", sp.get("port"))
                pw = f"port {sp.get('name') or sp.get('port')}"
                for n in hit:
                    key = "name" if isinstance(tp, str) else "containerPort"
                    found = next(((c, cp) for c in pods[n][1]["spec"]["containers"]
                                  for cp in c.get("ports", []) if cp.get(key) == tp), None)
                    if not found:
                        fail(where, f"{pw}: targetPort {tp!r} is not a container port of Deployment {n}")
                        continue
                    role = str((found[0].get("args") or [""])[0])
                    server = next((x for x in repo.servers.get(role, [])
                                   if x[1] == found[1].get("name")), None)
                    if server and server[2] and sp.get("appProtocol") != server[2]:
                        fail(where, f"{pw}: appProtocol {sp.get('appProtocol')!r}: the {role} serves "
                                    f"plaintext HTTP/2 with prior knowledge, {server[2]}")
        elif kind == "PodDisruptionBudget":
            sel = spec.get("selector", {}).get("matchLabels", {})
            hit = selected(sel, pods)
            if not hit:
                fail(where, f"selector {sel} matches no Deployment's pods")
            mina, maxu = spec.get("minAvailable"), spec.get("maxUnavailable")
            for n in hit:
                replicas = int(m.get("Deployment", n)["spec"].get("replicas", 1))
                if (isinstance(mina, int) and mina >= replicas) or mina == "100%" or maxu in (0, "0%"):
                    fail(where, f"minAvailable {mina} / maxUnavailable {maxu} of Deployment {n}'s "
                                f"{replicas} replicas: no pod may be evicted, node drains block")
        elif kind == "Job" and name == "dlbrain-topics":
            c = spec["template"]["spec"]["containers"][0]
            refs = [(ef.get("configMapRef") or {}).get("name") for ef in c.get("envFrom") or []]
            if CLUSTER_CM not in refs:
                fail(where, f"does not read ConfigMap {CLUSTER_CM} (envFrom)")
            ev = {e["name"]: str(e.get("value")) for e in c.get("env", [])}
            if ev.get("TOPICS") != " ".join(repo.topics):
                fail(where, f"env TOPICS={ev.get('TOPICS')!r}, the pipeline's topics are "
                            f"{' '.join(repo.topics)!r}")
            script = " ".join(str(x) for x in (c.get("command") or []) + (c.get("args") or []))
            for key in CLUSTER_KEYS:
                var = repo.settings[key][1]
                if var in ev:
                    fail(where, f"env {var}: set here, it hides {CLUSTER_CM}'s (one place)")
                if not re.search(r"\$\{?" + var + r"\b", script):
                    fail(where, f"the script does not take {key} from ${var} ({CLUSTER_CM})")
    if any(k == "HorizontalPodAutoscaler" for k, _ in m.objs):
        src = "".join(repo.read(os.path.relpath(os.path.join(d, f), top))
                      for d, _, fs in sorted(os.walk(os.path.join(top, "pipeline")))
                      for f in sorted(fs) if f.endswith(".c"))
        if f'"{LAG_METRIC}"' not in src:
            fail("deploy/k8s/hpa-alternative.yaml", f"no pipeline/*.c exports {LAG_METRIC}")

    # The config rules ConfigMap is deploy/config-rules, byte for byte.
    rules = m.get("ConfigMap", "dlbrain-config-rules")
    if not rules:
        fail("deploy/k8s", "no ConfigMap dlbrain-config-rules")
    else:
        for k, v in rules.get("data", {}).items():
            src = os.path.join(top, "deploy/config-rules", k)
            if not os.path.exists(src):
                fail("deploy/k8s/config-rules.yaml", f"key {k}: no deploy/config-rules/{k}")
            elif open(src, encoding="utf-8").read() != v:
                fail("deploy/k8s/config-rules.yaml", f"key {k} differs from deploy/config-rules/{k}")

    # The kustomization: its files exist, the files it leaves out say so.
    kpath = "deploy/k8s/kustomization.yaml"
    kus = (docs.get(kpath) or [{}])[0]
    ktext = open(os.path.join(top, kpath)).read() if os.path.exists(os.path.join(top, kpath)) else ""
    listed = set(kus.get("resources", []))
    for r in listed:
        if not os.path.exists(os.path.join(top, "deploy/k8s", r)):
            fail(kpath, f"resource {r} does not exist")
    for rel in m.files:
        f = os.path.basename(rel)
        if f not in listed and not re.search(r"^#\s+" + re.escape(f) + r"\s", ktext, re.M):
            fail(kpath, f"{f} is neither a resource nor named in the comment of files left out")
    keda = sorted({rel for (kind, _), (rel, _) in m.objs.items() if kind == "ScaledObject"})
    if keda:
        check_replacements(repo, kus, kpath)
    if kubectl and m.get("ConfigMap", CLUSTER_CM):
        check_one_place(repo, m, top, kubectl, keda)
        rc, out, err = run([kubectl, "kustomize", os.path.join(top, "deploy/k8s")])
        if rc:
            fail(kpath, f"kubectl kustomize: {err.strip()}")
        else:
            built = [d for d in yaml.safe_load_all(out) if d]
            ns = kus.get("namespace")
            for d in built:
                if d["kind"] == "ClusterRoleBinding":
                    for s in d.get("subjects", []):
                        if s.get("kind") == "ServiceAccount" and s.get("namespace") != ns:
                            fail(kpath, f"built ClusterRoleBinding {d['metadata']['name']}: subject "
                                        f"namespace {s.get('namespace')} is not {ns}")
    return m


def check_replacements(repo, kus, kpath):
    """The kustomization writes dlbrain-cluster's env and brokers into the KEDA
    triggers: bootstrapServers whole, the groups' and topics' prefix."""
    reps = kus.get("replacements") or []

    def covered(var, field, prefix):
        for r in reps:
            src = r.get("source") or {}
            if (src.get("kind"), src.get("name"), src.get("fieldPath")) != \
                    ("ConfigMap", CLUSTER_CM, f"data.{var}"):
                continue
            for t in r.get("targets") or []:
                opts = t.get("options") or {}
                if (t.get("select") or {}).get("kind") != "ScaledObject":
                    continue
                if prefix != (opts.get("delimiter") == "." and opts.get("index", 0) == 0):
                    continue
                if f"spec.triggers.*.metadata.{field}" in (t.get("fieldPaths") or []):
                    return True
        return False

    for key, field, prefix in (("brokers", "bootstrapServers", False), ("env", "consumerGroup", True),
                               ("env", "topic", True)):
        var = repo.settings[key][1]
        if not covered(var, field, prefix):
            fail(kpath, f"no replacement writes ConfigMap {CLUSTER_CM}'s {var} into the KEDA "
                        f"triggers' {field}" + (" (the part before the first '.')" if prefix else ""))


def check_one_place(repo, m, top, kubectl, keda):
    """Built with the KEDA files added and other values in dlbrain-cluster,
    every trigger carries them and no object the old ones: nothing repeats
    them."""
    old_env, old_brokers = m.setting("env"), m.setting("brokers")
    new_env, new_brokers = "oneplace", "one-place-a:9093,one-place-b:9093"
    tmp = tempfile.mkdtemp(prefix="dlb-deploy-one-place.")
    try:
        k8s = os.path.join(tmp, "k8s")
        shutil.copytree(os.path.join(top, "deploy/k8s"), k8s)
        kfile = os.path.join(k8s, "kustomization.yaml")
        kus = yaml.safe_load(open(kfile)) or {}
        kus["resources"] = list(kus.get("resources") or []) + \
            [os.path.basename(r) for r in keda if os.path.basename(r) not in (kus.get("resources") or [])]
        with open(kfile, "w") as f:
            yaml.safe_dump(kus, f)
        rel = m.objs[("ConfigMap", CLUSTER_CM)][0]
        sfile = os.path.join(tmp, os.path.relpath(rel, "deploy"))
        docs = list(yaml.safe_load_all(open(sfile)))
        for d in docs:
            if d and d.get("kind") == "ConfigMap" and d["metadata"]["name"] == CLUSTER_CM:
                d["data"][repo.settings["env"][1]] = new_env
                d["data"][repo.settings["brokers"][1]] = new_brokers
        with open(sfile, "w") as f:
            yaml.safe_dump_all(docs, f)
        rc, out, err = run([kubectl, "kustomize", k8s])
        where = f"deploy/k8s with {', '.join(os.path.basename(r) for r in keda)} and other values in {CLUSTER_CM}"
        if rc:
            fail(where, f"kubectl kustomize: {err.strip()}")
            return
        old = [old_brokers] + [f"{old_env}.{t}" for t in repo.topics] + \
            [f"{old_env}.{r}" for r in list(repo.inputs) + ["relay"]]
        for d in (d for d in yaml.safe_load_all(out) if d):
            what = f"{where}: built {d['kind']} {d['metadata']['name']}"
            text = yaml.safe_dump(d)
            for o in old:
                if re.search(r"(?<![\w.-])" + re.escape(o) + r"(?![\w-])", text):
                    fail(what, f"still holds {o!r}: it repeats a value of {CLUSTER_CM}")
            if d["kind"] != "ScaledObject":
                continue
            for t in d.get("spec", {}).get("triggers", []):
                md = t.get("metadata", {})
                if t.get("type") != "kafka":
                    continue
                if md.get("bootstrapServers") != new_brokers:
                    fail(what, f"bootstrapServers {md.get('bootstrapServers')!r}, not {CLUSTER_CM}'s")
                for field in ("consumerGroup", "topic"):
                    if not str(md.get(field, "")).startswith(new_env + "."):
                        fail(what, f"{field} {md.get(field)!r} does not start with {CLUSTER_CM}'s env")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---- compose -------------------------------------------------------------------


def check_compose(repo, docs, top):
    rel = "deploy/compose.yaml"
    if rel not in docs:
        fail(rel, "missing")
        return
    c = docs[rel][0]
    base = os.path.join(top, "deploy")
    # Debian 12's Compose (1.29, scripts/setup installs it) as well as v2.
    dc = shutil.which("docker-compose")
    if dc:
        rc, out, err = run([dc, "-f", os.path.join(top, rel), "config", "-q"], env=clean_env())
        if rc:
            fail(rel, f"docker-compose ({dc}) refuses it: {' '.join(err.strip().splitlines()[:2])}")
    else:
        print("note - no docker-compose: deploy/compose.yaml not read by Compose 1.29")
    services = c.get("services", {})
    secrets = c.get("secrets", {})
    volumes = c.get("volumes", {}) or {}
    for name, s in secrets.items():
        if "file" in s and not os.path.exists(os.path.join(base, s["file"])):
            fail(rel, f"secret {name}: file {s['file']} does not exist")
    for name, s in services.items():
        where = f"{rel}: service {name}"
        if "image" not in s and "build" not in s:
            fail(where, "neither image nor build")
        b = s.get("build")
        if b:
            ctx = os.path.join(base, b.get("context", ".") if isinstance(b, dict) else b)
            if not os.path.isdir(ctx):
                fail(where, f"build context {ctx} does not exist")
            elif isinstance(b, dict) and not os.path.exists(os.path.join(ctx, b.get("dockerfile", "Dockerfile"))):
                fail(where, f"build dockerfile {b.get('dockerfile')} does not exist")
        deps = s.get("depends_on", {})
        for d, cond in (deps.items() if isinstance(deps, dict) else ((d, {}) for d in deps)):
            if d not in services:
                fail(where, f"depends_on {d}: no such service")
                continue
            cond = (cond or {}).get("condition", "service_started")
            if cond == "service_healthy" and "healthcheck" not in services[d]:
                fail(where, f"depends_on {d} being healthy, but {d} has no healthcheck")
            if cond not in ("service_started", "service_healthy", "service_completed_successfully"):
                fail(where, f"depends_on {d}: unknown condition {cond}")
        for sname in s.get("secrets", []):
            sname = sname if isinstance(sname, str) else sname.get("source")
            if sname not in secrets:
                fail(where, f"secret {sname}: not declared under secrets")
        for v in s.get("volumes", []):
            src = v.split(":")[0] if isinstance(v, str) else v.get("source")
            if src.startswith((".", "/")):
                if not os.path.exists(os.path.join(base, src)):
                    fail(where, f"volume source {src} does not exist")
            elif src not in volumes:
                fail(where, f"named volume {src} is not declared under volumes")
        for p in s.get("ports", []):
            if not str(p).startswith("127.0.0.1:"):
                fail(where, f"port {p} is not published on 127.0.0.1 only")
        image = str(s.get("image", ""))
        if image.split(":")[0] == DLBRAIN_IMAGE:
            cmd = s.get("command", [])
            if not cmd or cmd[0] not in repo.commands:
                fail(where, f"command {cmd} does not start with a dlbrain command")
            env = s.get("environment", {})
            for k, v in env.items():
                if k.startswith("DLBRAIN_") and not repo.is_env_var(k):
                    fail(where, f"environment {k}: dlbrain reads no such variable")
                if k.endswith("_FILE"):
                    m = re.fullmatch(r"/run/secrets/(.+)", str(v))
                    if not m or m.group(1) not in [x if isinstance(x, str) else x.get("target")
                                                   for x in s.get("secrets", [])]:
                        fail(where, f"environment {k}={v}: not a secret of the service")
            if cmd and cmd[0] in DUMP_COMMANDS:
                # What the service listens on, as the binary resolves its
                # environment and options (the secrets' files are not here).
                denv = clean_env()
                denv.update({k: str(v) for k, v in env.items()
                             if k.startswith("DLBRAIN_") and not k.endswith("_FILE")})
                rc, out, err = run([repo.dlbrain] + [str(x) for x in cmd] + ["-D"], env=denv)
                if rc:
                    fail(where, f"dlbrain refuses the service's settings: {err.strip()}")
                else:
                    served = repo.served_ports(cmd[0], parse_settings(out))
                    serves = ", ".join(f"{n} {q}" for q, (n, _) in sorted(served.items()))
                    published = set()
                    for p in s.get("ports", []):
                        inner = str(p).rsplit(":", 1)[-1].split("/")[0]
                        published.add(inner)
                        if not inner.isdigit() or int(inner) not in served:
                            fail(where, f"port {p}: container port {inner} is not one the {cmd[0]} "
                                        f"serves ({serves})")
                    for q, (n, key) in sorted(served.items()):
                        if n != "metrics" and str(q) not in published:
                            fail(where, f"does not publish its {n} port {q} ({key})")
        if "topics" in name:
            text = " ".join(str(x) for x in s.get("command", []))
            for t in repo.topics:
                if t not in re.findall(r"[\w.-]+", text):
                    fail(where, f"does not create topic {t}")
            want = repo.settings["topic.partitions"][0]
            if f"--partitions {want}" not in text:
                fail(where, f"partitions are not topic.partitions' default {want}")


# ---- Dockerfile ----------------------------------------------------------------


def dockerignored(path, patterns):
    ignored = False
    parts = path.rstrip("/").split("/")
    for neg, pat in patterns:
        pat = pat.rstrip("/")
        for i in range(1, len(parts) + 1):
            if fnmatch.fnmatch("/".join(parts[:i]), pat):
                ignored = not neg
                break
    return ignored


def check_dockerfile(repo, top, k8s):
    rel = "deploy/Dockerfile"
    path = os.path.join(top, rel)
    if not os.path.exists(path):
        fail(rel, "missing")
        return
    text = re.sub(r"\\\n", " ", open(path).read())
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    stages = [ln.split()[1] for ln in lines if ln.upper().startswith("FROM ")]
    if len(stages) < 2 or stages[0] != "debian:12" or stages[-1] != "debian:12-slim":
        fail(rel, f"stages {stages}: expected a debian:12 build stage and a debian:12-slim runtime")
    patterns = []
    di = os.path.join(top, ".dockerignore")
    if os.path.exists(di):
        for ln in open(di).read().splitlines():
            ln = ln.strip()
            if ln and not ln.startswith("#"):
                patterns.append((ln.startswith("!"), ln.lstrip("!")))
    stage, installs, prefix, user, entry, copied_bin = 0, {0: set(), 1: set()}, None, None, None, None
    exposed = set()
    for ln in lines:
        word = ln.split()[0].upper()
        if word == "FROM":
            stage = min(stage + (1 if installs[0] or prefix else 0), 1)
        elif word == "RUN":
            for m in re.finditer(r"apt-get install ([^&;]*)", ln):
                installs[stage] |= {w for w in m.group(1).split() if not w.startswith("-")}
            m = re.search(r"cmake --install \S+ --prefix (\S+)", ln)
            if m:
                prefix = m.group(1)
        elif word == "COPY":
            args = ln.split()[1:]
            if args[0].startswith("--from="):
                copied_bin = (args[1], args[2])
                continue
            for src in args[:-1]:
                if not os.path.exists(os.path.join(top, src)):
                    fail(rel, f"COPY {src}: no such file in the build context")
                elif dockerignored(src.rstrip("/").lstrip("./"), patterns):
                    fail(rel, f"COPY {src}: left out of the build context by .dockerignore")
        elif word == "USER":
            user = ln.split()[1]
        elif word == "ENTRYPOINT":
            entry = ln.split(None, 1)[1]
        elif word == "EXPOSE" and stage == 1:
            exposed |= {w.split("/")[0] for w in ln.split()[1:]}
    # The build stage has every -dev package scripts/setup installs for the build.
    setup = repo.read("scripts/setup")
    m = re.search(r"pkgs=\((.*?)\)\s*#", setup, re.S) or re.search(r"pkgs=\((.*?)\)", setup, re.S)
    setup_pkgs = set(re.sub(r"#[^\n]*", "", m.group(1)).split()) if m else set()
    for p in sorted(setup_pkgs):
        if p.endswith("-dev") and not p.startswith("libclang-rt") and p not in installs[0]:
            fail(rel, f"build stage does not install {p} (scripts/setup does)")
    # The binary comes from where cmake installs it.
    cm = re.search(r"install\(TARGETS dlbrain RUNTIME DESTINATION (\S+)\)", repo.read("CMakeLists.txt"))
    want = f"{prefix}/{cm.group(1) if cm else 'bin'}/dlbrain"
    if not copied_bin or copied_bin[0] != want:
        fail(rel, f"COPY --from=build {copied_bin and copied_bin[0]}: cmake installs dlbrain at {want}")
    elif copied_bin[1] not in ("/usr/local/bin/dlbrain", "/usr/bin/dlbrain"):
        fail(rel, f"the binary goes to {copied_bin[1]}, not on PATH for ENTRYPOINT dlbrain")
    if entry != '["dlbrain"]':
        fail(rel, f"ENTRYPOINT {entry}, expected [\"dlbrain\"]")
    # The runtime image exposes the ports the roles serve by default.
    for key in ["metrics.port"] + sorted(k for v in repo.servers.values() for k, _, _ in v):
        port = repo.settings[key][0].rpartition(":")[2]
        if port not in exposed:
            fail(rel, f"EXPOSE {' '.join(sorted(exposed))} lacks {port}, the default {key}")
    uid = (user or "0").split(":")[0]
    if not uid.isdigit() or uid == "0":
        fail(rel, f"USER {user}: not a numeric non-root user (runAsNonRoot needs a number)")
    for (kind, name), (frel, o) in k8s.objs.items():
        if kind == "Deployment":
            sc = o["spec"]["template"]["spec"].get("securityContext", {})
            if str(sc.get("runAsUser")) != uid:
                fail(f"{frel}: {kind} {name}", f"runAsUser {sc.get('runAsUser')} is not the image's USER {uid}")
    # Every runtime package is a Debian 12 package, and they cover what the
    # binary links. One apt-cache and one dpkg call: each costs a second.
    if not shutil.which("apt-cache"):
        print("note - no apt-cache: runtime package names not checked")
        return
    rc, out, err = run(["apt-cache", "show", "--no-all-versions"] + sorted(installs[1]))
    known = set(re.findall(r"^Package: (\S+)", out, re.M))
    for p in sorted(installs[1] - known):
        fail(rel, f"runtime package {p} is not a Debian package here (apt-cache show)")
    rc, out, err = run(["readelf", "-d", repo.dlbrain])
    sonames = [s for s in re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)
               if not re.match(r"lib(asan|ubsan|lsan)", s)]
    dirs = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib/x86_64-linux-gnu")
    rc, out, err = run(["dpkg", "-S"] + [os.path.join(d, s) for s in sonames for d in dirs])
    owners = {}
    for ln in out.splitlines():
        pkg, path = ln.split(": ", 1)
        owners.setdefault(os.path.basename(path), pkg.split(":")[0])
    for soname in sonames:
        owner = owners.get(soname)
        if owner is None:
            fail(rel, f"{soname} (linked by dlbrain): no Debian package found owning it")
        elif owner not in installs[1] and owner not in BASE_PACKAGES:
            fail(rel, f"dlbrain links {soname} from {owner}, which the runtime stage does not install")


def main():
    top, dlbrain = sys.argv[1], sys.argv[2]
    repo = Repo(top, dlbrain)
    docs = load_yaml_files(top)
    n = sum(len(d) for d in docs.values())
    if not problems:
        print(f"ok - {len(docs)} YAML files under deploy/ parse ({n} documents)")
    kubectl = shutil.which("kubectl")

    def area(what, fn, *a):
        before = len(problems)
        r = fn(*a)
        if len(problems) == before:
            print(f"ok - {what}")
        return r

    # DLB_DEPLOY_ONLY=k8s|compose|dockerfile: the self-tests of 07-deploy break
    # one file at a time and need only its area (the Dockerfile's reads k8s).
    only = os.environ.get("DLB_DEPLOY_ONLY", "")
    k8s = None
    if only in ("", "k8s", "dockerfile"):
        k8s = area("deploy/k8s: every reference resolves, every dlbrain container's settings load"
                   + ("" if kubectl else " (no kubectl: kustomize build not checked)"),
                   check_k8s, repo, docs, top, kubectl)
    if only in ("", "compose"):
        area("deploy/compose.yaml: services, dependencies, secrets, volumes, ports", check_compose,
             repo, docs, top)
    if only in ("", "dockerfile"):
        area("deploy/Dockerfile: COPY sources, .dockerignore, install path, packages",
             check_dockerfile, repo, top, k8s)
    for p in problems:
        print(f"FAIL - {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
