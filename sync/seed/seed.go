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
	"github.com/syncdesk/syncdesk/sync/redact"
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
	// Redactor masks the request excerpts as the connector's masks them
	// (default redact.New(nil): the fields every redactor masks).
	Redactor *redact.Redactor
}

// Counts are the rows written so far.
type Counts struct{ Records, Links, Attempts int }

// batchLinks is about how many links gen draws at a time, with their
// records and attempts: tens of megabytes.
const batchLinks = 10_000

// ErrNotEmpty means Fill was given a database that already has records or links.
var ErrNotEmpty = errors.New("the database already has records or links; seed an empty one")

// Fill seeds an empty database (migrated, with no records or links) in one
// transaction: records, links and attempts in id order, in multi-row
// INSERTs, with the tables' secondary indexes (and Postgres's foreign keys)
// dropped during the load and rebuilt before the commit; then it counts
// the aggregates the overview reads. It gives ids itself: nothing else may
// write these tables while it runs.
func Fill(ctx context.Context, db *gorm.DB, o Options) error {
	o, err := o.withDefaults()
	if err != nil {
		return err
	}
	var done Counts
	err = db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := checkEmpty(tx); err != nil {
			return err
		}
		restore, err := prepareLoad(tx)
		if err != nil {
			return err
		}
		if done, err = load(ctx, tx, o); err != nil {
			return err
		}
		for _, q := range restore {
			if err := tx.Exec(q).Error; err != nil {
				return fmt.Errorf("restore %q: %w", q, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	if err := finish(ctx, db, done, o.Now); err != nil {
		return err
	}
	return reconcileRuns(db.WithContext(ctx), o)
}

// load writes every batch gen draws.
func load(ctx context.Context, tx *gorm.DB, o Options) (Counts, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	in := newInserter(models.Dialect(tx))
	batches, genErr := generate(ctx, &gen{o: o, rng: o.Rand})
	var done Counts
	for b := range batches {
		if err := in.write(ctx, tx, b); err != nil {
			return done, err
		}
		done.Records, done.Links, done.Attempts = done.Records+b.nRecords, done.Links+b.nLinks, done.Attempts+b.nAttempts
		if o.Progress != nil {
			o.Progress(done)
		}
	}
	return done, <-genErr
}

// generate draws batches in a goroutine, so the next batch is ready when
// the database has written the last one.
func generate(ctx context.Context, g *gen) (<-chan *batch, <-chan error) {
	out, errc := make(chan *batch, 1), make(chan error, 1)
	go func() {
		defer close(out)
		for g.more() {
			b, err := g.next(batchLinks)
			if err != nil {
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
		errc <- nil
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
	if o.Redactor == nil {
		o.Redactor = redact.New(nil)
	}
	return o, nil
}

func checkEmpty(tx *gorm.DB) error {
	for _, m := range []any{&models.Record{}, &models.Link{}} {
		var ids []int64
		if err := tx.Model(m).Limit(1).Pluck("id", &ids).Error; err != nil {
			return err
		}
		if len(ids) > 0 {
			return ErrNotEmpty
		}
	}
	return nil
}

// runStride: a seeded run finds something wrong with one link in
// runStride, or in fewer for a small seed, so that it finds a few dozen.
const runStride = 500

// reconcileRuns gives each service one completed reconciliation run, an
// hour before o.Now, that found a discrepancy for one link in a stride:
// field mismatches and missing objects it fixed, duplicates it reported.
func reconcileRuns(db *gorm.DB, o Options) error {
	if o.Links == 0 {
		return nil
	}
	started, finished := o.Now.Add(-time.Hour), o.Now.Add(-55*time.Minute)
	stride := min(runStride, max(1, o.Links/30))
	for _, svc := range o.Services {
		var links int64
		if err := db.Model(&models.Link{}).Where("external_service = ?", svc).Count(&links).Error; err != nil {
			return fmt.Errorf("seed: count links of %s: %w", svc, err)
		}
		run := models.ReconciliationRun{Service: svc, TriggeredBy: "scheduler", StartedAt: started, HeartbeatAt: &finished}
		if err := models.StartRun(db, &run); err != nil {
			return fmt.Errorf("seed: reconciliation run of %s: %w", svc, err)
		}
		err := db.Exec(`INSERT INTO discrepancies (run_id, kind, status, local_type, local_id, external_key, external_ids, link_id, detail, created_at)
			SELECT ?, CASE (id / ?) % 3 WHEN 0 THEN 'field_mismatch' WHEN 1 THEN 'missing_remote' ELSE 'duplicate_remote' END,
				CASE (id / ?) % 3 WHEN 2 THEN 'reported' ELSE 'fixed' END,
				local_type, local_id, external_key, external_id, id, 'seeded', ?
			FROM external_map WHERE external_service = ? AND id % ? = 0`,
			run.ID, stride, stride, finished, svc, stride).Error
		if err != nil {
			return fmt.Errorf("seed: discrepancies of %s: %w", svc, err)
		}
		var fixed int64
		if err := db.Model(&models.Discrepancy{}).Where("run_id = ? AND status = ?", run.ID, models.DiscrepancyFixed).Count(&fixed).Error; err != nil {
			return fmt.Errorf("seed: count fixes of %s: %w", svc, err)
		}
		err = db.Model(&run).Updates(map[string]any{"status": models.RunCompleted, "expected": links, "scanned": links,
			"fixed": fixed, "finished_at": finished}).Error
		if err != nil {
			return fmt.Errorf("seed: finish the run of %s: %w", svc, err)
		}
	}
	return nil
}

// finish moves Postgres's id sequences past the ids Fill gave and vacuums
// the tables, and counts the aggregates the overview reads.
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
		// What autovacuum would do soon after: statistics for the planner,
		// and the visibility map that lets index-only scans skip the rows.
		if err := db.Exec("VACUUM (ANALYZE) records, external_map, attempts").Error; err != nil {
			return fmt.Errorf("seed: vacuum: %w", err)
		}
	}
	if err := models.RefreshStats(db, now); err != nil {
		return fmt.Errorf("seed: count the aggregates: %w", err)
	}
	return nil
}
