#!/bin/sh
# The official image's contract, in short: on an empty $PGDATA, initdb with POSTGRES_USER (default
# postgres) as superuser and POSTGRES_PASSWORD as its password, password authentication from
# other hosts, and POSTGRES_DB (default the user's name) created; then run the command as the
# postgres user.
set -eu
if [ "$(id -u)" = 0 ]; then
    mkdir -p "$PGDATA"
    chown -R postgres:postgres "$PGDATA" /var/run/postgresql
    chmod 700 "$PGDATA"
    exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
if [ "${1:-}" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
    user="${POSTGRES_USER:-postgres}"
    db="${POSTGRES_DB:-$user}"
    password_file=$(mktemp)
    printf '%s\n' "${POSTGRES_PASSWORD:?the stand-in, like the official image, needs POSTGRES_PASSWORD}" >"$password_file"
    initdb --username="$user" --pwfile="$password_file" --auth-local=trust \
        --auth-host=scram-sha-256 -D "$PGDATA" >/dev/null
    rm -f "$password_file"
    echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
    echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
    if [ "$db" != postgres ]; then
        pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
        psql -v ON_ERROR_STOP=1 --username "$user" --dbname postgres \
            -c "CREATE DATABASE \"$db\"" >/dev/null
        pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
    fi
    echo "initialised $PGDATA: user $user, database $db"
fi
exec "$@"
