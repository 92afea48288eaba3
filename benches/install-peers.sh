#!/usr/bin/env bash
# Installs the external peers of fibra-compare: wrk and hey (load_http) and Erlang/OTP (the
# process benches) from Debian's packages, oha (load_http) with cargo. A peer that is missing
# is skipped by its bench, with a line saying so.
set -euo pipefail
if command -v apt-get >/dev/null; then
    apt-get update -qq
    apt-get install -y -qq wrk hey erlang-base
fi
command -v oha >/dev/null || cargo install oha --locked
