#!/bin/sh
set -e
if [ -f /app/.env.defaults ]; then . /app/.env.defaults; fi
exec "$@"
