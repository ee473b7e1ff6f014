#!/usr/bin/env bash
# The Debian packages the tests drive: Chromium (browser tests), fonts for its rendering, bubblewrap (the
# grading sandbox), npm (the book's offline assets), PostgreSQL (the gradebook on a database server: the tests
# start a throwaway server of their own, tests/postgres.py). Installs what is missing when run as root with apt-get;
# otherwise says what is missing and leaves the rest to the tests. Called by `make test`.
set -uo pipefail

need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
[ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || need+=(fonts-dejavu-core)
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
{ command -v prlimit && command -v setpriv; } >/dev/null 2>&1 || need+=(util-linux)  # the sandbox's limits and uid
command -v npm >/dev/null 2>&1 || need+=(npm)
[ -x /usr/sbin/mkfs.ext4 ] || [ -x /sbin/mkfs.ext4 ] || need+=(e2fsprogs)  # the hub's drawers (hub/README.md)
# Debian puts only the client programs on PATH; the server's (initdb, postgres) are in /usr/lib/postgresql/<version>/bin
{ command -v initdb || compgen -G "/usr/lib/postgresql/*/bin/initdb"; } >/dev/null 2>&1 || need+=(postgresql)
if [ ${#need[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "installing ${need[*]} from Debian's packages"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  else
    echo "missing ${need[*]} and no apt-get (as root) to install them: the tests that need them will fail" >&2
  fi
fi

