package inbox

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
)

// Group commit, on SQLite: every delivery's transaction ended in its own
// COMMIT, and with synchronous=FULL each COMMIT waits for an fsync, one
// after another behind the single write lock. The committer runs the
// deliveries queued while the previous group committed in one transaction,
// each in its own SAVEPOINT, commits once, and only then answers them: a
// delivery is acknowledged only once what it wrote is durable.

// maxGroup bounds the deliveries in one transaction: the last of them
// waits for all the effects before it, and for their commit.
const maxGroup = 64

// job is one delivery's transaction body waiting for a group.
type job struct {
	ctx  context.Context
	fn   func(tx *gorm.DB) error
	done chan error // buffered: the committer never waits on a delivery
}

// committer queues deliveries and runs them in groups, one group at a
// time, each in the writer's turn it shares with the Receiver's other
// transactions.
type committer struct {
	db     *gorm.DB
	writer chan struct{}
	// commit ends a group's transaction; tests make it fail.
	commit func(tx *gorm.DB) error

	mu      sync.Mutex
	queue   []*job
	running bool // a goroutine is running groups until the queue is empty
}

func newCommitter(db *gorm.DB, writer chan struct{}) *committer {
	return &committer{db: db, writer: writer, commit: func(tx *gorm.DB) error { return tx.Commit().Error }}
}

// run queues fn for the next group and waits for its end: fn's own error,
// or the group's when its transaction could not be committed (then
// nothing of fn's is stored), or ctx's when ctx ended before the group
// took it (then fn never ran).
func (c *committer) run(ctx context.Context, fn func(tx *gorm.DB) error) error {
	j := &job{ctx: ctx, fn: fn, done: make(chan error, 1)}
	c.mu.Lock()
	c.queue = append(c.queue, j)
	if !c.running {
		c.running = true
		go c.loop()
	}
	c.mu.Unlock()
	return <-j.done
}

// loop runs groups until the queue is empty. It takes the writer's turn
// before it takes a group, so that the deliveries queued meanwhile join it.
func (c *committer) loop() {
	for {
		c.writer <- struct{}{}
		group := c.take()
		if len(group) == 0 {
			<-c.writer
			return
		}
		errs := c.runGroup(group)
		<-c.writer
		for i, j := range group {
			j.done <- errs[i]
		}
	}
}

// take removes up to maxGroup deliveries from the queue; when there are
// none it notes that no goroutine runs groups any more.
func (c *committer) take() []*job {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := min(len(c.queue), maxGroup)
	group := make([]*job, n)
	copy(group, c.queue)
	c.queue = c.queue[n:]
	if n == 0 {
		c.running, c.queue = false, nil
	}
	return group
}

// runGroup runs a group's deliveries in one transaction and commits it; it
// returns each delivery's error, in order. A delivery whose context ended
// while it queued does not run. The transaction carries no delivery's
// cancellation: a client going away must not interrupt the connection
// (SQLite would roll back everyone's work), so each delivery's statements
// carry its context's values and no deadline, as Transaction gives them.
func (c *committer) runGroup(group []*job) []error {
	errs := make([]error, len(group))
	live := 0
	for i, j := range group {
		if errs[i] = j.ctx.Err(); errs[i] == nil {
			live++
		}
	}
	if live == 0 {
		return errs
	}
	tx := c.db.WithContext(context.Background()).Begin()
	if tx.Error != nil {
		return failAll(errs, fmt.Errorf("begin a group of deliveries: %w", tx.Error))
	}
	for i, j := range group {
		if errs[i] != nil {
			continue
		}
		var fatal error
		if errs[i], fatal = savepoint(tx, "d"+strconv.Itoa(i), j); fatal != nil {
			tx.Rollback()
			return failAll(errs, fatal)
		}
	}
	if err := c.commit(tx); err != nil {
		return failAll(errs, fmt.Errorf("commit a group of deliveries: %w", err))
	}
	return errs
}

// savepoint runs one delivery in its own savepoint: its error rolls back
// its work alone. fatal is an error of the savepoint's own statements,
// after which the transaction cannot go on.
func savepoint(tx *gorm.DB, name string, j *job) (err, fatal error) {
	if fatal = models.Savepoint(tx, name); fatal != nil {
		return nil, fmt.Errorf("savepoint: %w", fatal)
	}
	if err = runJob(tx, j); err != nil {
		if fatal = models.RollbackToSavepoint(tx, name); fatal != nil {
			return err, fmt.Errorf("roll back to savepoint: %w", fatal)
		}
	}
	if fatal = models.ReleaseSavepoint(tx, name); fatal != nil {
		return err, fmt.Errorf("release savepoint: %w", fatal)
	}
	return err, nil
}

// runJob runs a delivery's body on tx with its context's values. A panic
// in an effect becomes that delivery's error: it runs on the committer's
// goroutine, where the server's recovery cannot see it, and would
// otherwise end the process with the writer's turn held.
func runJob(tx *gorm.DB, j *job) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("a webhook's effect panicked: %v", p)
		}
	}()
	return j.fn(tx.WithContext(context.WithoutCancel(j.ctx)))
}

// failAll gives every delivery that has no error of its own err.
func failAll(errs []error, err error) []error {
	for i := range errs {
		if errs[i] == nil {
			errs[i] = err
		}
	}
	return errs
}
