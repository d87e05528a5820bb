#!/usr/bin/env python3
"""Validates deploy/k8s/*.yaml: every resource against Kubernetes' own schemas for KUBERNETES_VERSIONS, strictly
(unknown fields are errors), with PyPI's kubernetes-validate (no cluster needed); then what the schemas cannot see:
names that refer to each other (governing Services, selectors, ConfigMaps, probe ports, $(VAR) references in
args), NATS routes and markerd's --cluster naming the NATS StatefulSet's pods, the probes, resources, disruption
budgets and non-root, read-only containers the deployment promises; and that nats-server (Debian's 2.9, which
`scripts/install-deps.sh --test` installs) accepts nats.conf (`nats-server -t`).

    python3 deploy/k8s/test_k8s.py [FILE.yaml ...]     (default: every deploy/k8s/*.yaml)

Exit status 0 when all holds; otherwise each problem on one line and status 1.
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

import kubernetes_validate
import yaml

# The Kubernetes version the manifests are written for, and the oldest they work with (README.md there says so).
KUBERNETES_VERSIONS = ("1.33.0", "1.27.0")
# Made by hand (deploy/k8s/README.md), not by the manifests.
EXTERNAL_SECRETS = {"markerd-secrets"}

problems = []


def problem(text):
    problems.append(text)


def name_of(resource):
    return f"{resource['kind']}/{resource['metadata']['name']}"


def containers(resource):
    return resource["spec"]["template"]["spec"]["containers"]


def matches(selector, labels):
    return bool(selector) and all(labels.get(key) == value for key, value in selector.items())


def check_cross_references(resources):
    by_kind = {}
    for resource in resources:
        by_kind.setdefault(resource["kind"], {})[resource["metadata"]["name"]] = resource
    services = by_kind.get("Service", {})
    config_maps = by_kind.get("ConfigMap", {})
    stateful_sets = by_kind.get("StatefulSet", {})
    templates = {name: s["spec"]["template"]["metadata"]["labels"] for name, s in stateful_sets.items()}

    for name, sts in stateful_sets.items():
        what = f"StatefulSet/{name}"
        governing = services.get(sts["spec"]["serviceName"])
        if not governing or governing["spec"].get("clusterIP") != "None":
            problem(f"{what}: serviceName {sts['spec']['serviceName']} is not a headless Service here")
        if not matches(sts["spec"]["selector"]["matchLabels"], templates[name]):
            problem(f"{what}: selector does not match its pod template's labels")
        pod = sts["spec"]["template"]["spec"]
        if not pod.get("securityContext", {}).get("runAsNonRoot"):
            problem(f"{what}: pod securityContext lacks runAsNonRoot: true")
        claims = {c["metadata"]["name"] for c in sts["spec"].get("volumeClaimTemplates", [])}
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        for container in containers(sts):
            where = f"{what} container {container['name']}"
            security = container.get("securityContext", {})
            if security.get("readOnlyRootFilesystem") is not True or security.get("allowPrivilegeEscalation") is not False:
                problem(f"{where}: needs readOnlyRootFilesystem: true and allowPrivilegeEscalation: false")
            if security.get("capabilities", {}).get("drop") != ["ALL"]:
                problem(f"{where}: does not drop all capabilities")
            resources = container.get("resources", {})
            if not resources.get("requests") or not resources.get("limits", {}).get("memory"):
                problem(f"{where}: needs resource requests and a memory limit")
            port_names = {p["name"] for p in container.get("ports", [])}
            for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
                port = container.get(probe, {}).get("httpGet", {}).get("port")
                if port is None:
                    problem(f"{where}: no {probe} over HTTP")
                elif isinstance(port, str) and port not in port_names:
                    problem(f"{where}: {probe} uses port {port}, not one of {sorted(port_names)}")
            for mount in container.get("volumeMounts", []):
                if mount["name"] not in claims and mount["name"] not in volumes:
                    problem(f"{where}: mounts {mount['name']}, neither a volume nor a claim template")
            # $(VAR) in args that the environment does not define stays literal: a silent typo.
            defined = {e["name"] for e in container.get("env", [])}
            for source in container.get("envFrom", []):
                ref = source.get("configMapRef", {}).get("name")
                if ref not in config_maps:
                    problem(f"{where}: envFrom ConfigMap {ref} is not defined here")
                else:
                    defined |= set(config_maps[ref].get("data", {}))
            for arg in container.get("args", []):
                for var in re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", arg):
                    if var not in defined:
                        problem(f"{where}: arg {arg!r} uses $({var}), which its environment does not define")
        for volume in volumes.values():
            if "configMap" in volume and volume["configMap"]["name"] not in config_maps:
                problem(f"{what}: volume {volume['name']} names ConfigMap {volume['configMap']['name']}, not defined here")
            if "secret" in volume and volume["secret"]["secretName"] not in EXTERNAL_SECRETS:
                problem(f"{what}: volume {volume['name']} names Secret {volume['secret']['secretName']}, unknown")

    for name, service in services.items():
        selector = service["spec"].get("selector", {})
        if not any(matches(selector, labels) for labels in templates.values()):
            problem(f"Service/{name}: its selector {selector} matches no pod template")
    for name, policy in by_kind.get("NetworkPolicy", {}).items():
        selectors = [policy["spec"]["podSelector"]["matchLabels"]] + [
            peer["podSelector"]["matchLabels"] for rule in policy["spec"].get("ingress", [])
            for peer in rule.get("from", []) if "podSelector" in peer]
        for selector in selectors:
            if not any(matches(selector, labels) for labels in templates.values()):
                problem(f"NetworkPolicy/{name}: selector {selector} matches no pod template")
    for name, budget in by_kind.get("PodDisruptionBudget", {}).items():
        selected = [s for s, labels in templates.items() if matches(budget["spec"]["selector"]["matchLabels"], labels)]
        if len(selected) != 1:
            problem(f"PodDisruptionBudget/{name}: selects the pods of {selected}, not of exactly one StatefulSet")
        elif budget["spec"].get("minAvailable") != 2 or stateful_sets[selected[0]]["spec"]["replicas"] != 3:
            problem(f"PodDisruptionBudget/{name}: minAvailable 2 of 3 replicas expected")
    for name in stateful_sets:
        if not any(matches(b["spec"]["selector"]["matchLabels"], templates[name])
                   for b in by_kind.get("PodDisruptionBudget", {}).values()):
            problem(f"StatefulSet/{name}: no PodDisruptionBudget covers it")
    check_cluster(stateful_sets, services, config_maps)


def check_cluster(stateful_sets, services, config_maps):
    """NATS routes name every NATS pod; every markerd replica's --cluster names every NATS pod's client port."""
    nats = stateful_sets.get("nats")
    if not nats:
        problem("no StatefulSet/nats")
        return
    governing = nats["spec"]["serviceName"]
    pods = [f"nats-{i}.{governing}" for i in range(nats["spec"]["replicas"])]
    conf = config_maps.get("nats-config", {}).get("data", {}).get("nats.conf", "")
    routes = re.findall(r"nats-route://([^\s:]+):6222", conf)
    if sorted(routes) != pods:
        problem(f"nats.conf routes {routes}, expected {pods}")
    with tempfile.NamedTemporaryFile("w", suffix=".conf") as f:
        f.write(conf)
        f.flush()
        parsed = subprocess.run(["nats-server", "-c", f.name, "-t"], capture_output=True, text=True,
                                env={**os.environ, "POD_NAME": "nats-0"})
        if parsed.returncode != 0:
            problem(f"nats-server -t refuses nats.conf: {(parsed.stderr or parsed.stdout).strip()}")
    if not re.search(r"^\s*jetstream\s*\{[^}]*store_dir:\s*/data", conf, re.M):
        problem("nats.conf: JetStream's store_dir is not the /data volume")
    ports = {p["port"] for p in services.get(governing, {}).get("spec", {}).get("ports", [])}
    if not {4222, 6222} <= ports:
        problem(f"Service/{governing}: ports {sorted(ports)} lack 4222 or 6222")
    markerd = [s for name, s in stateful_sets.items() if name.startswith("markerd")]
    if not markerd:
        problem("no markerd StatefulSet")
    for sts in markerd:
        container = containers(sts)[0]
        args = container["args"]
        environment = {}
        for source in container.get("envFrom", []):
            environment.update(config_maps.get(source.get("configMapRef", {}).get("name"), {}).get("data", {}))
        environment.update({e["name"]: e["value"] for e in container.get("env", []) if "value" in e})

        def value(flag):
            if flag not in args:
                problem(f"StatefulSet/{sts['metadata']['name']}: no {flag}")
                return ""
            return re.sub(r"\$\((\w+)\)", lambda m: environment.get(m.group(1), m.group(0)), args[args.index(flag) + 1])

        expected = ",".join(f"nats://{pod}:4222" for pod in pods)
        if value("--cluster") != expected:
            problem(f"StatefulSet/{sts['metadata']['name']}: --cluster {value('--cluster')}, expected {expected}")
        if value("--node-id") != "$(POD_NAME)":
            problem(f"StatefulSet/{sts['metadata']['name']}: --node-id is not the pod's name")
        group = sts["spec"]["template"]["metadata"]["labels"].get("markerd-group")
        if value("--cluster-group") != group or sts["metadata"]["name"] != f"markerd-{group}":
            problem(f"StatefulSet/{sts['metadata']['name']}: --cluster-group {value('--cluster-group')}, label {group}")
        for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
            if container.get(probe, {}).get("httpGet", {}).get("path") != path:
                problem(f"StatefulSet/{sts['metadata']['name']}: {probe} is not GET {path}")
        advertised = value("--advertise")
        if f".{sts['spec']['serviceName']}.$(POD_NAMESPACE).svc:" not in advertised:
            problem(f"StatefulSet/{sts['metadata']['name']}: --advertise {advertised} is not the pod's stable DNS name")


def main():
    files = sys.argv[1:] or sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "*.yaml")))
    resources = []
    for path in files:
        with open(path) as f:
            for document in yaml.safe_load_all(f):
                if document is None:
                    continue
                for version in KUBERNETES_VERSIONS:
                    try:
                        kubernetes_validate.validate(document, version, strict=True)
                    except kubernetes_validate.ValidationError as error:
                        problem(f"{os.path.basename(path)}: {name_of(document)} (Kubernetes {version}): "
                                f"{'.'.join(map(str, error.path))}: {error.message}")
                    except kubernetes_validate.SchemaNotFoundError as error:
                        problem(f"{os.path.basename(path)}: no Kubernetes {version} schema: {error}")
                resources.append(document)
    check_cross_references(resources)
    for text in problems:
        print(f"deploy/k8s: {text}", file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"deploy/k8s: {len(resources)} resources in {len(files)} files valid for Kubernetes "
          f"{' and '.join(KUBERNETES_VERSIONS)} (strict) and consistent")


if __name__ == "__main__":
    main()
