package models

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"gorm.io/gorm"
)

// writeWait bounds how long a transaction waits for its turn at the write
// gate: far beyond any one transaction of syncdesk's, so that reaching it
// says something holds a transaction it never ends.
const writeWait = time.Minute

// writeGate hands this process's SQLite transactions the database's one
// write lock in the order they asked for it. Every transaction begins
// IMMEDIATE, taking the lock at BEGIN; left to SQLite, the writers that wait
// poll in its busy handler, sleeping in growing steps (1, 2, 5 … 100 ms), and
// a newcomer's first try often finds the lock free before a sleeper wakes. Under
// a steady load a writer that has slept long enough keeps losing to newer
// ones until its busy timeout refuses it ("database is locked") while others
// go through: dozens of API clients writing at once met that. Queued here
// instead, a writer waits behind those that came first, however many, and
// BEGIN meets a free lock (another process, or a statement outside a
// transaction, still meets the busy timeout).
//
// It stands between GORM and the database's connections: BeginTx takes the
// turn (a channel of one, whose waiting senders are served first come,
// first served), and the transaction's commit or rollback, or the end of its
// context (database/sql rolls the transaction back then), gives it back.
type writeGate struct {
	*sql.DB // statements outside a transaction pass straight through
	turn    chan struct{}
}

func newWriteGate(db *sql.DB) *writeGate { return &writeGate{DB: db, turn: make(chan struct{}, 1)} }

// GetDBConn lets GORM's DB() reach the connections (to close them, or set
// their limits).
func (g *writeGate) GetDBConn() (*sql.DB, error) { return g.DB, nil }

// BeginTx waits for the write turn, then begins the transaction.
func (g *writeGate) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	wait := time.NewTimer(writeWait)
	defer wait.Stop()
	select {
	case g.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-wait.C:
		return nil, fmt.Errorf("begin a transaction: no turn at the database's write lock after %s", writeWait)
	}
	tx, err := g.DB.BeginTx(ctx, opts)
	if err != nil {
		<-g.turn
		return nil, err
	}
	t := &gatedTx{Tx: tx, gate: g}
	t.stop = context.AfterFunc(ctx, t.giveBack)
	return t, nil
}

// gatedTx is a transaction holding the write turn until it ends.
type gatedTx struct {
	*sql.Tx
	gate *writeGate
	stop func() bool // stops the give-back at the end of the context
	once sync.Once
}

func (t *gatedTx) GetDBConn() (*sql.DB, error) { return t.gate.DB, nil }

func (t *gatedTx) Commit() error {
	defer t.end()
	return t.Tx.Commit()
}

func (t *gatedTx) Rollback() error {
	defer t.end()
	return t.Tx.Rollback()
}

func (t *gatedTx) end() {
	t.stop()
	t.giveBack()
}

func (t *gatedTx) giveBack() { t.once.Do(func() { <-t.gate.turn }) }
