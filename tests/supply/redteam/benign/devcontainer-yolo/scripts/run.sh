#!/bin/sh
set -eu
docker run --rm -it --network agent-net -v "$PWD":/workspace ghcr.io/acme/devcontainer:1 claude --dangerously-skip-permissions -p "$1"
