"""Validates the Kubernetes manifests Warden ships against the Kubernetes
OpenAPI schemas (the `kubernetes-validate` package bundles them; strict:
an unknown or misspelt field fails): every file `deploy/` kustomizations
list, every overlay patch, and the sandbox backend's golden manifests
(`host/sandbox/src/kubernetes/golden/`). Also fails when a YAML file under
`deploy/` is listed by no kustomization (it would never be applied).

Usage: python tests/deploy/validate.py [REPO_ROOT]; exit code 0 when all pass.
"""

import json
import pathlib
import sys

import kubernetes_validate
import yaml

# The oldest Kubernetes minor Warden supports (k8s-openapi's `v1_33`).
VERSION = "1.33.0"


def validate(path: pathlib.Path, docs: list, failures: list) -> int:
    count = 0
    for doc in docs:
        if doc is None:
            continue
        kind = f"{doc.get('kind')}/{doc.get('metadata', {}).get('name')}"
        try:
            kubernetes_validate.validate(doc, VERSION, strict=True)
            count += 1
        except kubernetes_validate.ValidationError as e:
            failures.append(f"{path}: {kind}: {e.message} at {'.'.join(map(str, e.path))}")
        except Exception as e:  # an unknown kind or version: a failure too
            failures.append(f"{path}: {kind}: {e}")
    return count


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    deploy = root / "deploy"
    failures: list = []
    listed = set()
    validated = 0
    kustomizations = sorted(deploy.rglob("kustomization.yaml"))
    if not kustomizations:
        failures.append(f"no kustomization.yaml under {deploy}")
    for k in kustomizations:
        spec = yaml.safe_load(k.read_text())
        files = list(spec.get("resources", []))
        files += [p["path"] for p in spec.get("patches", []) if "path" in p]
        for name in files:
            target = (k.parent / name).resolve()
            if target.is_dir():
                if not (target / "kustomization.yaml").exists():
                    failures.append(f"{k}: {name} is a directory without a kustomization")
                continue
            if not target.exists():
                failures.append(f"{k}: {name} does not exist")
                continue
            listed.add(target)
            docs = list(yaml.safe_load_all(target.read_text()))
            validated += validate(target, docs, failures)
    for path in sorted(deploy.rglob("*.yaml")):
        if path.name != "kustomization.yaml" and path.resolve() not in listed:
            failures.append(f"{path}: listed by no kustomization")
    golden = root / "host/sandbox/src/kubernetes/golden"
    for path in sorted(golden.glob("*.json")):
        validated += validate(path, [json.loads(path.read_text())], failures)
    for f in failures:
        print(f"FAIL {f}")
    print(f"{validated} objects valid against Kubernetes {VERSION}, {len(failures)} failures")
    return 1 if failures or validated == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
