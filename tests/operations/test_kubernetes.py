"""deploy/kubernetes/ as an operator applies it: every object passes kubernetes-validate's
strict schemas; every pod runs the release's image as the Dockerfile's user, with a read-only
root, commands hangar has and probes on the ports it declares; the selectors find their
pods; and the settings (a ConfigMap, a Secret mounted as files) load as hangar reads them,
the example's placeholders refused."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from scripts.smoke_installed import GET_ROUTES
from typer.testing import CliRunner

from hangar import __version__
from hangar.cli import app
from hangar.foundation.config import FILE_SETTINGS, ConfigError, load_settings
from tests.fixtures.deploy import DEPLOY
from tests.fixtures.environment import SECRET

MANIFESTS = DEPLOY / "kubernetes"
DOCKERFILE = DEPLOY / "container" / "Dockerfile"
KUBERNETES = "1.37.0"  # the newest schemas kubernetes-validate holds; the manifests need 1.30+

Object = dict[str, Any]


def objects() -> list[Object]:
    found = []
    for path in sorted(MANIFESTS.glob("*.yaml")):
        found += [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    return found


def named(kind: str, name: str) -> Object:
    (found,) = [o for o in objects() if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def pod_specs() -> dict[str, Object]:
    """Every pod template's spec, by the name of what makes it."""
    specs = {}
    for o in objects():
        if o["kind"] in ("Deployment", "Job"):
            specs[o["metadata"]["name"]] = o["spec"]["template"]["spec"]
        elif o["kind"] == "CronJob":
            specs[o["metadata"]["name"]] = o["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return specs


def test_every_object_passes_the_strict_schemas() -> None:
    kinds = sorted(o["kind"] for o in objects())
    settings, jobs = ["ConfigMap", "Secret"], ["Job", "CronJob", "PersistentVolumeClaim"]
    servers = ["Deployment", "Service", "PodDisruptionBudget"]
    workers = ["Deployment", "PodDisruptionBudget"]
    assert kinds == sorted([*settings, *jobs, *servers, *workers])
    for o in objects():
        kubernetes_validate.validate(o, KUBERNETES, strict=True)


def test_the_strict_schemas_refuse_a_field_kubernetes_does_not_have() -> None:
    deployment = named("Deployment", "hangar-serve")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["livenessProbes"] = container["livenessProbe"]  # a typo kubectl would drop
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES, strict=True)


def test_every_pod_runs_this_release_as_the_images_user_with_a_read_only_root() -> None:
    (user,) = re.findall(r"^USER (\d+):(?:\d+)$", DOCKERFILE.read_text(), re.MULTILINE)
    assert int(user) != 0
    specs = pod_specs()
    assert sorted(specs) == sorted(
        [f"hangar-migrate-{__version__}", "hangar-backup", "hangar-serve", "hangar-worker"]
    )
    for name, spec in specs.items():
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        assert spec["securityContext"]["runAsUser"] == int(user), name
        assert spec["securityContext"]["fsGroup"] == int(user), name  # reads the secret files
        assert spec["automountServiceAccountToken"] is False, name
        (container,) = spec["containers"]
        assert container["image"] == f"hangar:{__version__}", name
        guarded = container["securityContext"]
        assert guarded["readOnlyRootFilesystem"] is True, name
        assert guarded["allowPrivilegeEscalation"] is False, name
        assert guarded["capabilities"]["drop"] == ["ALL"], name
        # hangar's only writes outside a volume: temporary files and serve's metrics folder.
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        volumes = {v["name"]: v for v in spec["volumes"]}
        assert "emptyDir" in volumes[mounts["/tmp"]], name


@pytest.mark.parametrize("made_by", sorted(pod_specs()))
def test_every_pod_starts_a_command_hangar_has(made_by: str) -> None:
    (container,) = pod_specs()[made_by]["containers"]
    # click parses every option before --help answers: one hangar lacks is an error.
    done = CliRunner().invoke(app, [*container["args"], "--help"])
    assert done.exit_code == 0, done.output


def test_the_probes_ask_hangars_health_endpoints_on_declared_ports() -> None:
    serve = pod_specs()["hangar-serve"]["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in serve["ports"]}
    assert ports == {"http": int(serve["args"][serve["args"].index("--port") + 1])}
    paths = {}
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert serve[probe]["httpGet"]["port"] == "http"
        paths[probe] = serve[probe]["httpGet"]["path"]
    # Liveness asks no datastore (an outage must not restart every pod); readiness does.
    assert paths == {
        "startupProbe": "/api/health/live",
        "livenessProbe": "/api/health/live",
        "readinessProbe": "/api/health/ready",
    }
    assert {"/api/health/live", "/api/health/ready"} <= set(GET_ROUTES)

    worker = pod_specs()["hangar-worker"]["containers"][0]
    (port,) = worker["ports"]
    assert port["containerPort"] == int(worker["args"][worker["args"].index("--metrics-port") + 1])
    assert worker["livenessProbe"]["httpGet"] == {"path": "/api/health/live", "port": port["name"]}


def test_the_selectors_find_their_pods_and_only_theirs() -> None:
    labels = {
        name: named("Deployment", name)["spec"]["template"]["metadata"]["labels"]
        for name in ("hangar-serve", "hangar-worker")
    }

    def selects(selector: dict[str, str]) -> list[str]:
        return [name for name, has in labels.items() if selector.items() <= has.items()]

    for name in labels:
        own = named("Deployment", name)["spec"]["selector"]["matchLabels"]
        assert selects(own) == [name]
        assert selects(named("PodDisruptionBudget", name)["spec"]["selector"]["matchLabels"]) == [
            name
        ]
    assert selects(named("Service", "hangar")["spec"]["selector"]) == ["hangar-serve"]


def settings_as_mounted(tmp_path: Path, secret_values: dict[str, str]) -> dict[str, str]:
    """The environment a pod gets: the ConfigMap's variables, with the Secret's keys as files
    in the folder the pods mount it at (here a temporary one)."""
    config = named("ConfigMap", "hangar")["data"]
    mount = "/run/secrets/hangar"
    for name, spec in pod_specs().items():
        (container,) = spec["containers"]
        assert container["envFrom"] == [{"configMapRef": {"name": "hangar"}}], name
        (secrets,) = [m for m in container["volumeMounts"] if m["mountPath"] == mount]
        volume = {v["name"]: v for v in spec["volumes"]}[secrets["name"]]
        assert volume["secret"]["secretName"] == "hangar", name
    for key, value in secret_values.items():
        (tmp_path / key).write_text(value + "\n")
    return {k: v.replace(mount, str(tmp_path)) for k, v in config.items()}


def test_the_settings_load_as_hangar_reads_them(tmp_path: Path) -> None:
    example = named("Secret", "hangar")["stringData"]
    config = named("ConfigMap", "hangar")["data"]
    # Every secret setting comes from a file of the Secret, none from the environment.
    from_files = {k.removesuffix("_FILE") for k in config if k.endswith("_FILE")}
    assert from_files <= set(FILE_SETTINGS)
    assert not from_files & set(config)
    for name in from_files:
        assert Path(config[f"{name}_FILE"]).name in example, name

    values = example | {
        "database-url": f"sqlite:///{tmp_path / 'hangar.db'}",
        "secret-key": SECRET,
        "metrics-token": "m" * 32,
    }
    settings = load_settings(settings_as_mounted(tmp_path, values))
    assert settings.secret_key == SECRET
    assert settings.metrics_token == "m" * 32
    assert settings.redis_url == example["redis-url"]
    assert settings.public_url == config["HANGAR_PUBLIC_URL"]


def test_hangar_refuses_the_example_secrets_placeholders(tmp_path: Path) -> None:
    example = named("Secret", "hangar")["stringData"]
    values = example | {"database-url": f"sqlite:///{tmp_path / 'hangar.db'}"}
    with pytest.raises(ConfigError, match="HANGAR_SECRET_KEY"):
        load_settings(settings_as_mounted(tmp_path, values))
