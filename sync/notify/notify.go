// Package notify sends one notification about an incident to one channel:
// a webhook signed with the Standard Webhooks scheme, a Slack-compatible
// incoming webhook, or e-mail over SMTP. Deciding what to send and when,
// and retrying, is sync/alerts' job.
package notify

import (
	"context"
	"errors"
	"time"
)

// Message is one notification about an incident, in words.
type Message struct {
	// ID is unique per notification and the same on every retry of it, so
	// a receiver can drop a repeat (webhook-id, the e-mail's Message-ID).
	ID string
	// Incident is the incident's number; Rule the rule that opened it
	// (service_paused, failed_links, …); Subject what it is about (a
	// service's or a task's name, or "" for the whole desk).
	Incident int64
	Rule     string
	Subject  string
	// State is Opened, Repeated or Resolved.
	State State
	// Title is one line ("crm paused for 12 minutes"); Text says what is
	// wrong and what to do, in a support person's words.
	Title string
	Text  string
	// URL opens the page to look at, absolute when the desk's address is
	// configured, else a path.
	URL string
	// At is when the incident's state was decided.
	At time.Time
}

// State is where an incident stands in one notification.
type State string

const (
	Opened   State = "opened"
	Repeated State = "still open"
	Resolved State = "resolved"
)

// Headline is the title as a person reads it first (a mail's Subject, a
// Slack header): an incident's title is the one it opened with ("crm
// paused for 12 minutes"), and a notice that it is over, or still open,
// must not read like a new alarm in an inbox or a channel.
func (m Message) Headline() string {
	switch m.State {
	case Resolved:
		return "Resolved: " + m.Title
	case Repeated:
		return "Still open: " + m.Title
	}
	return m.Title
}

// Channel sends notifications to one place.
type Channel interface {
	Send(ctx context.Context, m Message) error
}

// ErrPermanent marks a failure that sending the same notification again
// cannot mend (a 4xx but 408/429, a refused recipient): the caller stops
// retrying it.
var ErrPermanent = errors.New("the channel refused the notification")
