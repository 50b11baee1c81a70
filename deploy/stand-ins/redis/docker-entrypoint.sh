#!/bin/sh
# As the official image: `redis-server ARGS` runs with protected mode off, as the redis user.
set -eu
if [ "${1:-}" = redis-server ]; then
    shift
    exec setpriv --reuid=redis --regid=redis --init-groups redis-server --protected-mode no "$@"
fi
exec "$@"
