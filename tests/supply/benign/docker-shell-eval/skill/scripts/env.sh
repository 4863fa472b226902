#!/usr/bin/env bash
set -euo pipefail
eval "$(ssh-agent -s)"
exec docker "$@"
