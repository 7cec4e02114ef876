package seed

import (
	"fmt"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
)

// seeded are the tables Fill writes.
var seeded = []string{"records", "external_map", "attempts"}

// prepareLoad readies the seeded tables for a bulk load inside tx and
// returns the statements that put them back as they were, to run in the
// same transaction once the rows are in.
//
// Why: external_map has over a dozen indexes, most on text keys that
// arrive in no useful order, and on Postgres every attempt row fires the
// foreign key's check on its own. Maintaining them row by row makes a
// million links take tens of minutes; building each index once by sorting
// and checking the foreign key in one join takes seconds. The definitions
// come from the catalog, so they stay exactly what the migrations made,
// and a failed load rolls everything back, the drops included.
func prepareLoad(tx *gorm.DB) ([]string, error) {
	prepare := sqlitePrepare
	if models.Dialect(tx) == models.Postgres {
		prepare = pgPrepare
	}
	last, err := prepare(tx) // what to restore after the indexes
	if err != nil {
		return nil, err
	}
	idx, err := secondaryIndexes(tx)
	if err != nil {
		return nil, err
	}
	var restore []string
	for _, ix := range idx {
		if err := tx.Exec(`DROP INDEX "` + ix.Name + `"`).Error; err != nil {
			return nil, fmt.Errorf("drop index %s: %w", ix.Name, err)
		}
		restore = append(restore, ix.Def)
	}
	return append(restore, last...), nil
}

// pgPrepare gives the transaction more memory for the index builds and a
// commit that need not wait for its WAL to reach the disk (seed rows can be
// made again), and drops the foreign keys.
func pgPrepare(tx *gorm.DB) ([]string, error) {
	for _, q := range []string{"SET LOCAL maintenance_work_mem = '256MB'", "SET LOCAL synchronous_commit = off"} {
		if err := tx.Exec(q).Error; err != nil {
			return nil, err
		}
	}
	return pgForeignKeys(tx)
}

// sqlitePrepare gives the connection a larger page cache for the load and
// the index builds' sorts, and returns the statement that gives it back.
func sqlitePrepare(tx *gorm.DB) ([]string, error) {
	var was int64
	if err := tx.Raw("PRAGMA cache_size").Scan(&was).Error; err != nil {
		return nil, err
	}
	if err := tx.Exec("PRAGMA cache_size = -262144").Error; err != nil {
		return nil, err
	}
	return []string{fmt.Sprintf("PRAGMA cache_size = %d", was)}, nil
}

type indexDef struct{ Name, Def string }

// secondaryIndexes lists the seeded tables' indexes other than the primary
// keys (and, on Postgres, other than those that back a constraint).
func secondaryIndexes(tx *gorm.DB) ([]indexDef, error) {
	var out []indexDef
	q := `SELECT name, sql AS def FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL AND tbl_name IN ? ORDER BY name`
	if models.Dialect(tx) == models.Postgres {
		q = `SELECT c.relname AS name, pg_get_indexdef(i.indexrelid) AS def FROM pg_index i
			JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid
			WHERE t.relnamespace = current_schema()::regnamespace AND t.relname IN ?
			AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid AND k.contype IN ('p', 'u', 'x'))
			ORDER BY c.relname`
	}
	if err := tx.Raw(q, seeded).Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("list indexes: %w", err)
	}
	return out, nil
}

// pgForeignKeys drops the foreign keys of the seeded tables and returns the
// statements that add them back (and check every row once, in one join).
func pgForeignKeys(tx *gorm.DB) ([]string, error) {
	var fks []struct{ Tbl, Name, Def string }
	err := tx.Raw(`SELECT t.relname AS tbl, k.conname AS name, pg_get_constraintdef(k.oid) AS def FROM pg_constraint k
		JOIN pg_class t ON t.oid = k.conrelid
		WHERE k.contype = 'f' AND t.relnamespace = current_schema()::regnamespace AND t.relname IN ? ORDER BY k.conname`,
		seeded).Scan(&fks).Error
	if err != nil {
		return nil, fmt.Errorf("list foreign keys: %w", err)
	}
	var restore []string
	for _, fk := range fks {
		if err := tx.Exec(`ALTER TABLE "` + fk.Tbl + `" DROP CONSTRAINT "` + fk.Name + `"`).Error; err != nil {
			return nil, fmt.Errorf("drop foreign key %s: %w", fk.Name, err)
		}
		restore = append(restore, `ALTER TABLE "`+fk.Tbl+`" ADD CONSTRAINT "`+fk.Name+`" `+fk.Def)
	}
	return restore, nil
}
