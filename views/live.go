package views

import (
	"bytes"
	"context"
	"hash/fnv"
	"io"
	"strconv"
	"time"

	"github.com/a-h/templ"
)

// LiveEvery is how often a live region asks for itself again while the tab
// is visible (static/js/live.js holds the polls while it is hidden).
const LiveEvery = 5 * time.Second

// LiveID is the id of a page's live region; htmx names it in the HX-Target
// header of the region's polls, which is how a handler knows to answer with
// the region alone.
const LiveID = "live"

// LiveFragment receives a page's live region when the page is rendered for
// a poll: the region's content and its version, the rest of the page unused.
type LiveFragment struct {
	HTML    []byte
	Version string
	Found   bool
}

type liveKey struct{}

// WithLiveFragment makes a page render its live region into f, and nothing
// else: a handler answers a poll with the very page it renders, so that the
// page and its fragment cannot drift apart.
func WithLiveFragment(ctx context.Context, f *LiveFragment) context.Context {
	return context.WithValue(ctx, liveKey{}, f)
}

// Live is the part of a page that keeps up by itself: every LiveEvery it
// asks the page's address again and swaps in the new content. Its version
// is a hash of the content, so an answer that would change nothing is a
// 204 and leaves the page — a ticked box, an open detail — alone. With on
// false (an older page of a list, which new rows would push away), or no
// address to ask (a page answering a form), the content is rendered
// plainly, once.
func Live(p Page, on bool) templ.Component {
	return templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		children := templ.GetChildren(ctx)
		ctx = templ.ClearChildren(ctx)
		if !on || p.URL == "" {
			return children.Render(ctx, w)
		}
		var buf bytes.Buffer
		if err := children.Render(ctx, &buf); err != nil {
			return err
		}
		// The paused banner and the open alerts' count sit outside the
		// region, in the page's frame, but they are news too: the version
		// covers them, and a poll's answer carries them to be swapped out of
		// band.
		var frame bytes.Buffer
		for _, part := range []framePart{pausedPart(p), alertsPart(p)} {
			if err := part.render(ctx, &frame, true); err != nil {
				return err
			}
		}
		version := liveVersion(buf.Bytes(), frame.Bytes())
		if f, ok := ctx.Value(liveKey{}).(*LiveFragment); ok {
			buf.Write(frame.Bytes())
			f.HTML, f.Version, f.Found = buf.Bytes(), version, true
			return nil
		}
		_, err := io.WriteString(w, `<div id="`+LiveID+`" class="live" data-live data-version="`+version+
			`" hx-get="`+templ.EscapeString(p.URL)+`" hx-trigger="every `+strconv.Itoa(int(LiveEvery/time.Second))+
			`s, live" hx-swap="innerHTML">`)
		if err == nil {
			_, err = w.Write(buf.Bytes())
		}
		if err == nil {
			_, err = io.WriteString(w, `</div>`)
		}
		return err
	})
}

// PausedSlotID and AlertsCountID are the elements of every signed-in
// page's frame that hold the paused banner and the open alerts' count,
// empty when there are none: a poll's places to swap them.
const (
	PausedSlotID  = "paused-slot"
	AlertsCountID = "alerts-count"
)

// framePart is a part of the page's frame a poll keeps true: the element
// (tag and id) the layout holds it in, and its content. The layout and a
// poll's answer write it alike; the answer marks it to be swapped out of band.
type framePart struct {
	tag, id string
	c       templ.Component
}

func pausedPart(p Page) framePart { return framePart{"div", PausedSlotID, pausedBanner(p)} }
func alertsPart(p Page) framePart { return framePart{"span", AlertsCountID, alertsCount(p)} }

func (fp framePart) render(ctx context.Context, w io.Writer, oob bool) error {
	open := `<` + fp.tag + ` id="` + fp.id + `"`
	if oob {
		open += ` hx-swap-oob="true"`
	}
	if _, err := io.WriteString(w, open+`>`); err != nil {
		return err
	}
	if err := fp.c.Render(ctx, w); err != nil {
		return err
	}
	_, err := io.WriteString(w, `</`+fp.tag+`>`)
	return err
}

// pausedSlot is the paused banner in its slot, under the page's header.
func pausedSlot(p Page) templ.Component {
	return templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		return pausedPart(p).render(ctx, w, false)
	})
}

func liveVersion(parts ...[]byte) string {
	h := fnv.New64a()
	for _, b := range parts {
		_, _ = h.Write(b)
		_, _ = h.Write([]byte{0})
	}
	return strconv.FormatUint(h.Sum64(), 36)
}

// navLabel is a navigation entry's words, and beside Alerts the slot of the
// open alerts' count: written here so that no whitespace joins the words.
func navLabel(p Page, n NavEntry) templ.Component {
	return templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		if _, err := io.WriteString(w, templ.EscapeString(n.Label)); err != nil || n.Path != "/alerts" {
			return err
		}
		return alertsPart(p).render(ctx, w, false)
	})
}
