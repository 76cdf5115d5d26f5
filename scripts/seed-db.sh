#!/usr/bin/env bash
# Creates the SQLite database of the default configuration's inventory branch when it is missing:
# table offers with 10,000 SKUs (A1 .. A10000). Usage: scripts/seed-db.sh [PATH] (default data/offers.db).
set -euo pipefail
db="${1:-data/offers.db}"
[ -s "$db" ] && exit 0
mkdir -p "$(dirname "$db")"
tmp="$db.tmp.$$"
trap 'rm -f "$tmp"' EXIT
sqlite3 "$tmp" >/dev/null <<'SQL'
CREATE TABLE offers (
  sku TEXT PRIMARY KEY,
  price_cent INTEGER NOT NULL,
  stock INTEGER NOT NULL
) WITHOUT ROWID;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000)
INSERT INTO offers SELECT 'A' || i, 100 + (i * 7919) % 90000, (i * 31) % 500 FROM n;
PRAGMA journal_mode = WAL;
SQL
mv "$tmp" "$db"
echo "created $db with $(sqlite3 "$db" 'SELECT count(*) FROM offers') offers"
