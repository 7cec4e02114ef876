// Package seed fills a database with records, links and attempts of a
// realistic shape, for benchmarks and for trying the dashboard at scale.
package seed

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
)

// Options say how much to seed and how.
type Options struct {
	Links    int // links to create, spread over the services that take each record's type
	Attempts int // attempts to create, spread over the links
	// Services are the external services of the links (default DefaultServices).
	Services []string
	// Now is the end of the seeded time line (default time.Now).
	Now time.Time
	// Rand draws the shape (default a fixed seed: the same options give the same data).
	Rand *rand.Rand
	// Progress, when set, is told the running totals after each batch.
	Progress func(Counts)
}

// Counts are the rows written so far.
type Counts struct{ Records, Links, Attempts int }

// batchLinks is about how many links one transaction writes, with their
// records and attempts: tens of megabytes, a few seconds of work.
const batchLinks = 10_000

// ErrNotEmpty means Fill was given a database that already has records or links.
var ErrNotEmpty = errors.New("the database already has records or links; seed an empty one")

// Fill seeds an empty database (migrated, with no records or links):
// records, links and attempts in id order, batchLinks links per
// transaction, then the aggregates the overview reads. Nothing else may
// write links while it runs: it gives ids itself.
func Fill(ctx context.Context, db *gorm.DB, o Options) error {
	o, err := o.withDefaults()
	if err != nil {
		return err
	}
	if err := checkEmpty(db.WithContext(ctx)); err != nil {
		return err
	}
	g := &gen{o: o, rng: o.Rand}
	in := newInserter(models.Dialect(db))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches, genErr := generate(ctx, g)
	var done Counts
	for b := range batches {
		if err := in.write(ctx, db, b); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
		done.Records, done.Links, done.Attempts = done.Records+b.nRecords, done.Links+b.nLinks, done.Attempts+b.nAttempts
		if o.Progress != nil {
			o.Progress(done)
		}
	}
	if err := <-genErr; err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	return finish(ctx, db, done, o.Now)
}

// generate draws batches in a goroutine, so the next batch is ready when
// the database has written the last one.
func generate(ctx context.Context, g *gen) (<-chan *batch, <-chan error) {
	out, errc := make(chan *batch, 1), make(chan error, 1)
	go func() {
		defer close(out)
		for {
			b, err := g.next(batchLinks)
			if err != nil || b == nil {
				errc <- err
				return
			}
			select {
			case out <- b:
			case <-ctx.Done():
				errc <- ctx.Err()
				return
			}
		}
	}()
	return out, errc
}

func (o Options) withDefaults() (Options, error) {
	if o.Links < 0 || o.Attempts < 0 {
		return o, fmt.Errorf("seed: links and attempts cannot be negative (got %d and %d)", o.Links, o.Attempts)
	}
	if o.Links == 0 && o.Attempts > 0 {
		return o, errors.New("seed: attempts need links to belong to")
	}
	if len(o.Services) == 0 {
		o.Services = DefaultServices
	}
	seen := map[string]bool{}
	for _, s := range o.Services {
		if s == "" || seen[s] {
			return o, fmt.Errorf("seed: service names must be distinct and not empty (got %q)", o.Services)
		}
		seen[s] = true
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	o.Now = o.Now.UTC()
	if o.Rand == nil {
		o.Rand = rand.New(rand.NewPCG(1, 2))
	}
	return o, nil
}

func checkEmpty(db *gorm.DB) error {
	for _, m := range []any{&models.Record{}, &models.Link{}} {
		var ids []int64
		if err := db.Model(m).Limit(1).Pluck("id", &ids).Error; err != nil {
			return fmt.Errorf("seed: %w", err)
		}
		if len(ids) > 0 {
			return fmt.Errorf("seed: %w", ErrNotEmpty)
		}
	}
	return nil
}

// finish moves Postgres's id sequences past the ids Fill gave, gives the
// planner fresh statistics (autovacuum would, a minute later), and counts
// the aggregates the overview reads.
func finish(ctx context.Context, db *gorm.DB, done Counts, now time.Time) error {
	db = db.WithContext(ctx)
	if models.Dialect(db) == models.Postgres {
		for table, last := range map[string]int{"records": done.Records, "external_map": done.Links, "attempts": done.Attempts} {
			if last == 0 {
				continue
			}
			if err := db.Exec("SELECT setval(pg_get_serial_sequence(?, 'id'), ?)", table, last).Error; err != nil {
				return fmt.Errorf("seed: move the %s id sequence: %w", table, err)
			}
		}
		if err := db.Exec("ANALYZE records, external_map, attempts").Error; err != nil {
			return fmt.Errorf("seed: analyze: %w", err)
		}
	}
	if err := models.RefreshLinkCounts(db, now); err != nil {
		return fmt.Errorf("seed: count links: %w", err)
	}
	if err := models.RefreshAttemptHours(db, now); err != nil {
		return fmt.Errorf("seed: count attempts per hour: %w", err)
	}
	return nil
}
