#!/bin/sh
for f in "$1"/*.png; do echo "optimising $f"; done
