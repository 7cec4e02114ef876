package seed

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
)

// maxParams is how many bound parameters one statement may carry: 65535 on
// Postgres (a uint16 in the protocol), SQLITE_MAX_VARIABLE_NUMBER (32766
// since SQLite 3.32) on SQLite.
func maxParams(dialect string) int {
	if dialect == models.Postgres {
		return 65535
	}
	return 32766
}

// inserter writes rows in multi-row INSERTs as large as the driver allows,
// reusing the statement text of each size so Postgres caches its plan.
type inserter struct {
	dialect string
	sql     map[string]string
}

func newInserter(dialect string) *inserter {
	return &inserter{dialect: dialect, sql: map[string]string{}}
}

// write inserts one batch inside the load's transaction.
func (in *inserter) write(ctx context.Context, tx *gorm.DB, b *batch) error {
	if err := in.insert(ctx, tx, "records", recordCols, b.records); err != nil {
		return err
	}
	if err := in.insert(ctx, tx, "external_map", linkCols, b.links); err != nil {
		return err
	}
	return in.insert(ctx, tx, "attempts", attemptCols, b.attempts)
}

// insert writes values (len(cols) per row) into table, as few statements as
// the parameter limit allows.
func (in *inserter) insert(ctx context.Context, tx *gorm.DB, table string, cols []string, values []any) error {
	per := maxParams(in.dialect) / len(cols) * len(cols)
	for len(values) > 0 {
		n := min(len(values), per)
		if _, err := tx.Statement.ConnPool.ExecContext(ctx, in.statement(table, cols, n/len(cols)), values[:n]...); err != nil {
			return fmt.Errorf("insert %d rows into %s: %w", n/len(cols), table, err)
		}
		values = values[n:]
	}
	return nil
}

// statement is INSERT INTO table (cols) VALUES (…), … for rows rows, in the
// dialect's placeholders.
func (in *inserter) statement(table string, cols []string, rows int) string {
	k := table + "/" + strconv.Itoa(rows)
	if q, ok := in.sql[k]; ok {
		return q
	}
	var sb strings.Builder
	sb.WriteString("INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES ")
	p := 0
	for r := range rows {
		if r > 0 {
			sb.WriteString(", ")
		}
		sb.WriteByte('(')
		for c := range cols {
			if c > 0 {
				sb.WriteString(", ")
			}
			p++
			if in.dialect == models.Postgres {
				sb.WriteString("$" + strconv.Itoa(p))
			} else {
				sb.WriteByte('?')
			}
		}
		sb.WriteByte(')')
	}
	in.sql[k] = sb.String()
	return in.sql[k]
}
