#!/bin/sh
set -eu
project=$(pwd)
dest="$project/../backups"
mkdir -p "$dest"
tar czf "$dest/$(basename "$project")-$(date +%Y%m%d).tar.gz" --exclude=node_modules --exclude=.venv -C "$project" .
echo "saved to $dest"
