#!/usr/bin/env bash
# Installs the external peers of fibra-compare's load_http bench: wrk and hey from Debian's
# packages, oha with cargo. A peer that is missing is skipped by the bench, with a line saying so.
set -euo pipefail
if command -v apt-get >/dev/null; then
    apt-get update -qq
    apt-get install -y -qq wrk hey
fi
command -v oha >/dev/null || cargo install oha --locked
