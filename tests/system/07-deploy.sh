#!/usr/bin/env bash
# deploy/ holds together, without servers: tests/system/deploy_check.py parses
# every manifest, resolves every reference (ConfigMaps, Secrets and their keys,
# the ServiceAccount, scale targets, probe ports, Service target ports and
# selectors), runs the binary on each container's settings (and checks the
# gateway's grpc port is gateway.address's), each role's credentials, RBAC
# only reads, the autoscalers' groups, topics and maxima, the disruption
# budget, the compose file and the Dockerfile. Then the checker must pass an
# unchanged copy of deploy/ and reject broken ones, each naming the file and
# object.
set -euo pipefail
top=${DLB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
DLBRAIN=${DLBRAIN:-$top/build/dlbrain}
case $DLBRAIN in /*) ;; *) DLBRAIN=$PWD/$DLBRAIN ;; esac
fail() { echo "FAIL - $*"; exit 1; }
# Debian's python3 with python3-yaml (scripts/setup).
py=/usr/bin/python3
"$py" -c 'import yaml' 2>/dev/null || fail "$py has no yaml module: run scripts/setup (python3-yaml)"
check="$top/tests/system/deploy_check.py"

# kubectl (its kustomize: every machine image has it) builds the kustomization;
# Debian's docker-compose (scripts/setup) reads the compose file.
command -v kubectl >/dev/null || fail "no kubectl: the kustomization cannot be built"
command -v docker-compose >/dev/null || fail "no docker-compose: run scripts/setup"
"$py" "$check" "$top" "$DLBRAIN" || fail "deploy/ does not pass the checks above"

# Negative self-tests on a copy: what the checker needs of the repository.
tmp=$(mktemp -d /tmp/dlbrain-deploy.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/repo/scripts"
cp -r "$top"/{CMakeLists.txt,.dockerignore,cmake,schemas,pipeline,consumers,producers,env,sim,bench,cli,tests} "$tmp/repo/"
cp "$top/scripts/setup" "$tmp/repo/scripts/"
# The copy as it is passes, so each rejection below is the change's doing.
cp -r "$top/deploy" "$tmp/repo/deploy"
out=$("$py" "$check" "$tmp/repo" "$DLBRAIN" 2>&1) || fail "self-test: the unchanged copy is rejected: $out"
echo "ok - the unchanged copy of deploy/ passes"
# broken FILE SED-EXPRESSION EXPECTED: the copy with one change is rejected,
# with a message that holds EXPECTED.
broken() {
    local file=$1 expr=$2 want=$3 out only
    rm -rf "$tmp/repo/deploy"
    cp -r "$top/deploy" "$tmp/repo/deploy"
    sed -i -e "$expr" "$tmp/repo/deploy/$file"
    cmp -s "$top/deploy/$file" "$tmp/repo/deploy/$file" && fail "self-test: '$expr' changed nothing in $file"
    case $file in k8s/*) only=k8s ;; compose.yaml) only=compose ;; *) only=dockerfile ;; esac
    if out=$(DLB_DEPLOY_ONLY=$only "$py" "$check" "$tmp/repo" "$DLBRAIN" 2>&1); then
        fail "the checker accepted deploy/$file with '$expr'"
    fi
    grep -qF -- "$want" <<<"$out" || fail "deploy/$file with '$expr': expected '$want' in: $out"
    echo "ok - rejected: $file: $want"
}
broken k8s/optimizer.yaml 's/name: dlbrain-settings/name: dlbrain-setings/' \
    "deploy/k8s/optimizer.yaml: Deployment dlbrain-optimizer: volume settings: no ConfigMap dlbrain-setings"
broken k8s/configurer.yaml 's|value: /etc/dlbrain/secrets/pg-dsn|value: /etc/dlbrain/secrets/pg-dns|' \
    "Secret dlbrain-credentials has no key pg-dns"
broken k8s/config-watch.yaml 's/DLBRAIN_PG_DSN_FILE/DLBRAIN_PG_DNS_FILE/' \
    "env DLBRAIN_PG_DNS_FILE: dlbrain reads no such variable"
broken k8s/optimizer.yaml 's|args: \["optimizer"|args: ["optimiser"|' \
    "do not start with a dlbrain command"
broken k8s/k8s-monitor.yaml 's|"-c", "/etc/dlbrain/dlbrain.conf"\]|"-X", "k8s.namespce=x"]|' \
    "-X k8s.namespce: not a dlbrain setting"
broken k8s/settings.yaml 's/^    redis.port=6379/    redis.prot=6379/' \
    "settings key 'redis.prot' is not a dlbrain setting"
broken k8s/optimizer.yaml 's/port: metrics}/port: metric}/' \
    "livenessProbe port 'metric' is not a declared container port"
broken k8s/k8s-monitor.yaml 's/serviceAccountName: dlbrain-k8s-monitor/serviceAccountName: dlbrain-monitor/' \
    "no ServiceAccount dlbrain-monitor"
broken k8s/k8s-monitor-rbac.yaml 's/verbs: \["get", "list", "watch"\]/verbs: ["get", "list", "watch", "delete"]/' \
    "ClusterRole dlbrain-k8s-monitor: verbs ['delete']"
broken k8s/keda-scaledobject.yaml 's/consumerGroup: dlbrain.configurer/consumerGroup: dlbrain.config/' \
    "ScaledObject dlbrain-configurer: consumerGroup 'dlbrain.config'"
broken k8s/keda-scaledobject.yaml '0,/topic: dlbrain.job-events/s//topic: dlbrain.plans/' \
    "topic 'dlbrain.plans' is not an input of the optimizer"
broken k8s/keda-scaledobject.yaml '0,/maxReplicaCount: 12/s//maxReplicaCount: 24/' \
    "maxReplicaCount 24 > topic.partitions 12"
broken k8s/hpa-alternative.yaml 's/name: dlbrain-configurer$/name: dlbrain-configure/' \
    "scaleTargetRef dlbrain-configure: no Deployment dlbrain-configure"
broken k8s/config-rules.yaml 's/cache_gb: 16/cache_gb: 32/' \
    "key example.yaml differs from deploy/config-rules/example.yaml"
broken k8s/config-watch.yaml 's|mountPath: /etc/dlbrain/rules, readOnly|mountPath: /etc/dlbrain/rules, subPath: example.yaml, readOnly|' \
    "not a directory mount of a ConfigMap"
broken k8s/relay.yaml 's/readOnlyRootFilesystem: true/readOnlyRootFilesystem: false/' \
    "container relay: readOnlyRootFilesystem is not true"
broken k8s/kustomization.yaml 's/  - configurer.yaml/  - configurer.yml/' \
    "resource configurer.yml does not exist"
# One place for the environment, brokers and topics' shape: dlbrain-cluster.
broken k8s/topics-job.yaml 's/--partitions "$DLBRAIN_TOPIC_PARTITIONS"/--partitions 6/' \
    "the script does not take topic.partitions from \$DLBRAIN_TOPIC_PARTITIONS (dlbrain-cluster)"
broken k8s/topics-job.yaml 's/- {name: TOPICS,/- {name: DLBRAIN_ENV, value: dlbrain}\n            - {name: TOPICS,/' \
    "env DLBRAIN_ENV: set here, it hides dlbrain-cluster's (one place)"
broken k8s/topics-job.yaml 's/- {name: TOPICS,/- {name: KAFKA, value: "kafka:9092"}\n            - {name: TOPICS,/' \
    "built Job dlbrain-topics: still holds 'kafka:9092': it repeats a value of dlbrain-cluster"
broken k8s/settings.yaml 's/^    redis.port=6379/    redis.port=6379\n    brokers=kafka:9092/' \
    "brokers is set in ConfigMap dlbrain-cluster too (DLBRAIN_BROKERS, which wins): keep it in one place"
broken k8s/settings.yaml 's/^  DLBRAIN_TOPIC_REPLICATION: "3"/  DLBRAIN_TOPIC_REPLICATIONS: "3"/' \
    "key DLBRAIN_TOPIC_REPLICATIONS: not the variable of a dlbrain setting"
broken k8s/optimizer.yaml '/configMapRef: {name: dlbrain-cluster}/d' \
    "container optimizer: does not read ConfigMap dlbrain-cluster (envFrom)"
broken k8s/kustomization.yaml 's/fieldPath: data.DLBRAIN_BROKERS/fieldPath: data.DLBRAIN_BROKER/' \
    "no replacement writes ConfigMap dlbrain-cluster's DLBRAIN_BROKERS into the KEDA triggers' bootstrapServers"
broken k8s/kustomization.yaml 's/options: {delimiter: ".", index: 0}/options: {delimiter: "-", index: 0}/' \
    "no replacement writes ConfigMap dlbrain-cluster's DLBRAIN_ENV into the KEDA triggers' consumerGroup (the part before the first '.')"
broken k8s/settings.yaml 's/^  dlbrain.conf: |/  dlbrain.conf: [/' \
    "deploy/k8s/settings.yaml: not valid YAML"
broken compose.yaml 's/rules: {condition: service_completed_successfully}/rule: {condition: service_completed_successfully}/' \
    "service configurer: depends_on rule: no such service"
broken compose.yaml '1i name: dlbrain' \
    "docker-compose (/usr/bin/docker-compose) refuses it"
broken compose.yaml 's/"127.0.0.1:9092:9092"/"9092:9092"/' \
    "port 9092:9092 is not published on 127.0.0.1 only"
broken compose.yaml 's/DLBRAIN_REDIS_HOST: redis/DLBRAIN_REDIS_HOSTNAME: redis/' \
    "environment DLBRAIN_REDIS_HOSTNAME: dlbrain reads no such variable"
broken Dockerfile 's|^COPY cli/ cli/|COPY client/ client/|' \
    "COPY client/: no such file in the build context"
broken Dockerfile 's/libhiredis0.14 //' \
    "dlbrain links libhiredis.so.0.14 from libhiredis0.14, which the runtime stage does not install"
broken Dockerfile 's/libcjson1 /libcjson2 /' \
    "runtime package libcjson2 is not a Debian package here"
broken Dockerfile 's|/opt/dlbrain/bin/dlbrain|/opt/dlbrain/dlbrain|' \
    "cmake installs dlbrain at /opt/dlbrain/bin/dlbrain"
# The gateway: its Service, ports, probes, credentials and disruption budget.
broken k8s/gateway.yaml 's/targetPort: grpc/targetPort: grcp/' \
    "Service dlbrain-gateway: port grpc: targetPort 'grcp' is not a container port of Deployment dlbrain-gateway"
broken k8s/gateway.yaml '/^kind: Service/,/^---/s/component: gateway$/component: gatway/' \
    "Service dlbrain-gateway: selector {'app.kubernetes.io/name': 'dlbrain', 'app.kubernetes.io/component': 'gatway'} matches no Deployment's pods"
broken k8s/gateway.yaml 's|appProtocol: kubernetes.io/h2c|appProtocol: grpc|' \
    "port grpc: appProtocol 'grpc': the gateway serves plaintext HTTP/2 with prior knowledge, kubernetes.io/h2c"
broken k8s/gateway.yaml 's/type: ClusterIP/type: LoadBalancer/' \
    "Service dlbrain-gateway: type LoadBalancer: dlbrain serves plaintext without authentication"
broken k8s/gateway.yaml 's/containerPort: 50001/containerPort: 50002/' \
    "container gateway: no container port named grpc = the port of gateway.address 0.0.0.0:50001"
broken k8s/gateway.yaml 's|"/etc/dlbrain/dlbrain.conf"\]|"/etc/dlbrain/dlbrain.conf", "-a", "127.0.0.1:50001"]|' \
    "gateway.address 127.0.0.1:50001: listens on 127.0.0.1 only, not on the pod's IP"
broken k8s/gateway.yaml 's/containerPort: 8000/containerPort: 8001/' \
    "container gateway: no container port named http = the port of gateway.http.address 0.0.0.0:8000"
broken k8s/gateway.yaml 's|"/etc/dlbrain/dlbrain.conf"\]|"/etc/dlbrain/dlbrain.conf", "-X", "gateway.http.address=0.0.0.0:0"]|' \
    "gateway.http.address 0.0.0.0:0: no fixed port for a Service to reach"
broken k8s/gateway.yaml 's|"/etc/dlbrain/dlbrain.conf"\]|"/etc/dlbrain/dlbrain.conf", "-X", "gateway.address=0.0.0.0:0"]|' \
    "gateway.address 0.0.0.0:0: no fixed port for a Service to reach"
broken k8s/gateway.yaml 's|tcpSocket: {port: grpc}|httpGet: {path: /healthz, port: metrics}|' \
    "container gateway: startupProbe is not tcpSocket on port grpc"
broken k8s/gateway.yaml 's/tcpSocket: {port: grpc}/tcpSocket: {port: gprc}/' \
    "container gateway: startupProbe port 'gprc' is not a declared container port"
broken k8s/gateway.yaml 's/DLBRAIN_PG_DSN_FILE/DLBRAIN_REDIS_PASSWORD_FILE/' \
    "env DLBRAIN_REDIS_PASSWORD_FILE: a credential the gateway never reads"
broken k8s/optimizer.yaml '/name: DLBRAIN_REDIS_PASSWORD_FILE/,+1d' \
    "container optimizer: no env DLBRAIN_REDIS_PASSWORD_FILE: the optimizer needs that credential"
broken k8s/gateway.yaml '/labelSelector:/,/component:/s/component: gateway$/component: gatway/' \
    "Deployment dlbrain-gateway: topologySpreadConstraints labelSelector"
broken k8s/gateway.yaml 's/minAvailable: 1/minAvailable: 2/' \
    "PodDisruptionBudget dlbrain-gateway: minAvailable 2 / maxUnavailable None of Deployment dlbrain-gateway's 2 replicas"
broken k8s/gateway.yaml '/^kind: PodDisruptionBudget/,$s/component: gateway$/component: gatway/' \
    "PodDisruptionBudget dlbrain-gateway: selector {'app.kubernetes.io/name': 'dlbrain', 'app.kubernetes.io/component': 'gatway'} matches no Deployment's pods"
broken compose.yaml 's/"127.0.0.1:50001:50001"/"127.0.0.1:50001:50002"/' \
    "service gateway: port 127.0.0.1:50001:50002: container port 50002 is not one the gateway serves"
broken compose.yaml 's/ports: \["127.0.0.1:50001:50001", /ports: [/' \
    "service gateway: does not publish its grpc port 50001 (gateway.address)"
broken compose.yaml 's/"127.0.0.1:8000:8000", //' \
    "service gateway: does not publish its http port 8000 (gateway.http.address)"
broken Dockerfile 's/^EXPOSE 9464 50001 8000/EXPOSE 9464 8000/' \
    "EXPOSE 8000 9464 lacks 50001, the default gateway.address"
broken Dockerfile 's/^EXPOSE 9464 50001 8000/EXPOSE 9464 50001/' \
    "EXPOSE 50001 9464 lacks 8000, the default gateway.http.address"
echo "07-deploy: all checks passed"
