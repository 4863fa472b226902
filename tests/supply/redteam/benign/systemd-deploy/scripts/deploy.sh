#!/bin/sh
set -eu
cat > /etc/systemd/system/webapp.service <<'EOF'
[Unit]
Description=webapp
[Service]
ExecStart=/usr/bin/node /srv/webapp/server.js
Restart=always
[Install]
WantedBy=multi-user.target
EOF
systemctl daemon-reload
systemctl enable --now webapp
