#!/bin/bash
# Run once by the postgres image's entrypoint when it creates the primary's cluster (docker-entrypoint-initdb.d):
# the standby's pg_basebackup and its WAL receiver connect as the `replication` pseudo-database, which the image's
# own `host all all all scram-sha-256` line does not cover.
set -euo pipefail
echo 'host replication all all scram-sha-256' >> "$PGDATA/pg_hba.conf"
