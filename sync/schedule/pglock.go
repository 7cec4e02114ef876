package schedule

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/go-co-op/gocron/v2"
)

// ErrHeldElsewhere means another instance is running the task right now.
var ErrHeldElsewhere = errors.New("task is running on another instance")

// PGLocker is a gocron.Locker on Postgres session advisory locks, so that
// each task runs on one instance at a time. A lock lives on one pooled
// connection, held for the run; if the instance dies, Postgres drops the
// connection and the lock with it.
type PGLocker struct{ DB *sql.DB }

// Lock takes the task's lock or fails at once with ErrHeldElsewhere.
func (l PGLocker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	conn, err := l.DB.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", key, err)
	}
	var got bool
	if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock(hashtext($1))", "syncdesk:"+key).Scan(&got); err != nil {
		conn.Close()
		return nil, fmt.Errorf("lock %s: %w", key, err)
	}
	if !got {
		conn.Close()
		return nil, fmt.Errorf("%s: %w", key, ErrHeldElsewhere)
	}
	return &pgLock{conn: conn, key: key}, nil
}

type pgLock struct {
	conn *sql.Conn
	key  string
}

// Unlock releases the lock. If that fails, the connection is thrown away
// rather than returned to the pool still holding the lock.
func (p *pgLock) Unlock(ctx context.Context) error {
	defer p.conn.Close()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_, err := p.conn.ExecContext(ctx, "SELECT pg_advisory_unlock(hashtext($1))", "syncdesk:"+p.key)
	if err != nil {
		_ = p.conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	return err
}
