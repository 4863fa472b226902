#!/bin/sh
set -eu
cp "$(dirname "$0")/pre-commit" .git/hooks/pre-commit
chmod +x .git/hooks/pre-commit
