package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/migrations"
	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/action"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/redact"
	"github.com/syncdesk/syncdesk/sync/seed"
)

// The admin subcommands: each opens the configured, migrated database, does
// one thing, audits it as "cli" where it changes who may do what, and says
// what it did.

// withDB is the subcommands' shared prologue: it loads the configuration,
// opens and migrates the database, runs fn, and closes the database.
func (c *cli) withDB(fn func(cfg config.Config, db *gorm.DB) error) error {
	cfg, db, err := c.openDB()
	if err != nil {
		return err
	}
	defer models.Close(db)
	return fn(cfg, db)
}

// audit records a subcommand's change as done by "cli".
func audit(db *gorm.DB, now time.Time, action, target, detail string) error {
	return models.Audit(db, models.AuditEntry{At: now, Actor: "cli", Action: action, Target: target,
		Outcome: models.OutcomeSuccess, Detail: detail})
}

// firstAdmin creates an admin with a generated password when there are no
// users at all, and prints the password once.
func (c *cli) firstAdmin(db *gorm.DB, now time.Time) error {
	n, err := models.CountUsers(db)
	if err != nil || n > 0 {
		return err
	}
	password := models.NewSecret(15)
	u, err := models.CreateUser(db, "admin@localhost", models.RoleAdmin, password, now)
	if errors.Is(err, models.ErrConflict) {
		return nil // another instance created it first
	}
	if err != nil {
		return err
	}
	_ = models.Audit(db, models.AuditEntry{At: now, Actor: "system", Action: action.UserAdd, Target: u.Email,
		Outcome: models.OutcomeSuccess, Detail: "first admin, created at first start"})
	fmt.Fprintf(c.stdout, "\nFirst start: created the admin account (the password is shown only this once)\n"+
		"  email:    %s\n  password: %s\n\n", u.Email, password)
	return nil
}

// migrate applies the migrations, saying how many and at which version the
// database now is (openDB would apply them without counting).
func (c *cli) migrate() error {
	cfg, err := c.config()
	if err != nil {
		return err
	}
	db, err := models.Open(cfg.DB)
	if err != nil {
		return err
	}
	defer models.Close(db)
	n, err := migrations.Apply(db)
	if err != nil {
		return err
	}
	v, _, _ := migrations.Current(db)
	fmt.Fprintf(c.stdout, "applied %d migration(s); the database is at version %d\n", n, v)
	return nil
}

// seedProgressEvery is how often seed reports how far it has come.
const seedProgressEvery = 10 * time.Second

// seed fills an empty database with links and attempts of a realistic
// shape, spread over the configured services (or, in the demo, the
// sandbox's and an ERP), printing its progress every seedProgressEvery.
func (c *cli) seed(links, attempts int) error {
	if attempts < 0 {
		attempts = 5 * links
	}
	return c.withDB(func(cfg config.Config, db *gorm.DB) error {
		names := cfg.ServiceNames()
		if len(names) == 0 {
			names = seed.DefaultServices
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		start := time.Now()
		last := start
		var done seed.Counts
		err := seed.Fill(ctx, db, seed.Options{Links: links, Attempts: attempts, Services: names, Redactor: redact.New(cfg.Redact), Progress: func(n seed.Counts) {
			done = n
			if time.Since(last) >= seedProgressEvery {
				last = time.Now()
				fmt.Fprintf(c.stdout, "… %d of %d links, %d attempts (%s)\n", n.Links, links, n.Attempts, time.Since(start).Round(time.Second))
			}
		}})
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "seeded %d records, %d links (%s) and %d attempts in %s\n",
			done.Records, done.Links, strings.Join(names, ", "), done.Attempts, time.Since(start).Round(100*time.Millisecond))
		return nil
	})
}

// userAdd adds a user with a generated password, or one read from stdin.
func (c *cli) userAdd(email, roleName string, passwordStdin bool) error {
	role, err := models.ParseRole(roleName)
	if err != nil {
		return fmt.Errorf("--role: %w", err)
	}
	password := models.NewSecret(15)
	if passwordStdin {
		line, err := bufio.NewReader(c.stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read password: %w", err)
		}
		password = strings.TrimRight(line, "\r\n")
	}
	return c.withDB(func(_ config.Config, db *gorm.DB) error {
		now := time.Now().UTC()
		u, err := models.CreateUser(db, email, role, password, now)
		if err != nil {
			return err
		}
		if err := audit(db, now, action.UserAdd, u.Email, "role "+string(role)); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "added %s (%s)\n", u.Email, u.Role)
		if !passwordStdin {
			fmt.Fprintf(c.stdout, "password: %s\n", password)
		}
		return nil
	})
}

// userList prints every user with role and state.
func (c *cli) userList() error {
	return c.withDB(func(_ config.Config, db *gorm.DB) error {
		users, err := models.ListUsers(db)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "EMAIL\tROLE\tSTATE\tCREATED")
		for _, u := range users {
			state := "active"
			if u.Disabled() {
				state = "disabled"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", u.Email, u.Role, state, u.CreatedAt.UTC().Format(time.DateTime))
		}
		return tw.Flush()
	})
}

// userDisable stops a user from signing in and ends their sessions.
func (c *cli) userDisable(email string) error {
	return c.withDB(func(_ config.Config, db *gorm.DB) error {
		now := time.Now().UTC()
		u, err := models.DisableUser(db, email, now)
		if err != nil {
			return err
		}
		if err := audit(db, now, action.UserDisable, u.Email, ""); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "disabled %s and ended their sessions\n", u.Email)
		return nil
	})
}

// tokenCreate makes an API token and prints it once.
func (c *cli) tokenCreate(name string) error {
	return c.withDB(func(_ config.Config, db *gorm.DB) error {
		now := time.Now().UTC()
		token, t, err := models.CreateAPIToken(db, name, "cli", now)
		if err != nil {
			return err
		}
		if err := audit(db, now, action.TokenCreate, t.Name, ""); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "token %q created; it is shown only this once:\n%s\n", t.Name, token)
		return nil
	})
}
