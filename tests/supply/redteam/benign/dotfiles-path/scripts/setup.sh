#!/bin/sh
set -eu
grep -q cargo/bin ~/.bashrc || echo 'export PATH="$HOME/.cargo/bin:$PATH"' >> ~/.bashrc
