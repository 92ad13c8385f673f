#!/bin/bash
# The standby of the `ha` profile: on its first start, a base backup of the primary (pg_basebackup -R writes
# standby.signal and primary_conninfo); then the image's own entrypoint, which finds a cluster and starts it as is.
# After a promotion (docs/operations.md "Failover") this data directory is a primary's: it is never backed up again.
set -euo pipefail
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  mkdir -p "$PGDATA"
  chown postgres:postgres "$PGDATA"
  chmod 700 "$PGDATA"
  until gosu postgres pg_isready --host postgres-primary --username "$POSTGRES_USER" --dbname "$POSTGRES_DB"; do sleep 1; done
  # The password from PGPASSWORD; the WAL streamed alongside (-X stream), so the copy is consistent on its own.
  gosu postgres pg_basebackup --host postgres-primary --username "$POSTGRES_USER" --pgdata "$PGDATA" \
    --write-recovery-conf --wal-method=stream --checkpoint=fast --progress
fi
exec docker-entrypoint.sh "$@"
