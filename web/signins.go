package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/syncdesk/syncdesk/models"
)

// Password checks at once. Each takes argon2's 19 MiB and a core's worth of
// work, so strangers share a few; a browser that has signed in before (a
// known device) has checks of its own, so that strangers guessing at other
// accounts can never make it wait; and no address may hold more than a
// couple of the strangers' checks, running or waiting, at once.
const (
	strangerChecks    = 4
	knownDeviceChecks = 2
	checksPerAddress  = 2
	signInWait        = 5 * time.Second // how long a sign-in waits for a check before it is told to come back
)

// deviceCookie marks a browser that has signed in to an account (a
// models.KnownDevice) for deviceLifetime after its last sign-in.
const (
	deviceCookie   = "syncdesk_device"
	deviceLifetime = 90 * 24 * time.Hour
)

var (
	// errAddressBusy: the address already holds checksPerAddress checks.
	errAddressBusy = errors.New("this address has too many sign-ins in progress")
	// errNoTurn: no check came free within the wait.
	errNoTurn = errors.New("no password check came free in time")
)

// signInRefusal is a sign-in turned away before its password was checked.
type signInRefusal struct {
	status  int
	message string
}

// takeCheckTurn gets a sign-in its turn to check a password, and returns
// the function that ends the turn — or why it was refused.
//
// A throttled account or address is refused at once, before it takes or
// waits for a turn: it can make no one wait. The throttle is read again
// inside the turn, after the failures of the checks ahead were recorded: a
// burst of guesses at one account gets at most strangerChecks-1 past the
// limit, not all of them.
func (s *Server) takeCheckTurn(c echo.Context, email string) (leave func(), refused *signInRefusal, err error) {
	if refused, err := s.throttleRefusal(c, email); refused != nil || err != nil {
		return nil, refused, err
	}
	known, err := s.knownDevice(c, email)
	if err != nil {
		return nil, nil, err
	}
	leave, err = s.signIns.enter(c.Request().Context(), c.RealIP(), known)
	switch {
	case errors.Is(err, errAddressBusy):
		return nil, &signInRefusal{http.StatusTooManyRequests, msgBusy}, nil
	case errors.Is(err, errNoTurn):
		return nil, &signInRefusal{http.StatusServiceUnavailable, msgBusy}, nil
	case err != nil:
		return nil, nil, err
	}
	if refused, err := s.throttleRefusal(c, email); refused != nil || err != nil {
		leave()
		return nil, refused, err
	}
	return leave, nil, nil
}

// throttleRefusal refuses (and audits) a sign-in to an account or from a
// client IP that has failed too often within the window.
func (s *Server) throttleRefusal(c echo.Context, email string) (*signInRefusal, error) {
	throttled, err := s.loginThrottled(s.requestDB(c), email, c.RealIP())
	if !throttled || err != nil {
		return nil, err
	}
	s.auditLogin(c, email, models.OutcomeThrottled, nil)
	return &signInRefusal{http.StatusTooManyRequests, fmt.Sprintf(msgThrottled, s.cfg.Login.Window)}, nil
}

// knownDevice reports whether the browser carries a device cookie from a
// sign-in to this account.
func (s *Server) knownDevice(c echo.Context, email string) (bool, error) {
	ck, err := c.Cookie(deviceCookie)
	if err != nil {
		return false, nil
	}
	return models.IsKnownDevice(s.requestDB(c), ck.Value, email, s.clock.Now())
}

// rememberDevice gives a browser that signed in its device cookie, or
// renews the one it has. The cookie goes only to /login, where it is read;
// a failure to write it costs the browser its own checks, not its sign-in.
func (s *Server) rememberDevice(c echo.Context, userID int64) {
	old := ""
	if ck, err := c.Cookie(deviceCookie); err == nil {
		old = ck.Value
	}
	now := s.clock.Now()
	token, err := models.RememberDevice(s.requestDB(c), old, userID, now, deviceLifetime)
	if err != nil {
		s.log.Error("remember the signed-in browser", "err", err)
		return
	}
	if token == "" {
		token = old
	}
	// A lifetime counted on the browser's clock, as the session's.
	c.SetCookie(&http.Cookie{Name: deviceCookie, Value: token, Path: "/login", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: s.overTLS(c), MaxAge: int(deviceLifetime.Seconds())})
}

// signInGate hands out turns to check a password.
type signInGate struct {
	strangers chan struct{}
	known     chan struct{}
	wait      time.Duration // signInWait; tests lengthen it to keep a queue standing

	mu        sync.Mutex
	byAddress map[string]int // strangers' sign-ins per address, running or waiting
}

func newSignInGate() *signInGate {
	return &signInGate{strangers: make(chan struct{}, strangerChecks), known: make(chan struct{}, knownDeviceChecks),
		wait: signInWait, byAddress: map[string]int{}}
}

// enter waits up to g.wait for a turn to check a password and returns the
// function that ends it. A known device takes one of its own checks, or a
// strangers' one if that comes free first; a stranger waits for a strangers'
// check, and is refused at once (errAddressBusy) when its address already
// holds checksPerAddress of them. errNoTurn says the wait ran out.
func (g *signInGate) enter(ctx context.Context, address string, known bool) (leave func(), err error) {
	var reserved chan struct{} // nil for a stranger: a nil channel never takes a send
	if known {
		reserved = g.known
	} else if !g.hold(address) {
		return nil, errAddressBusy
	}
	select {
	case reserved <- struct{}{}: // a known device's own check first, leaving the strangers' to them
		return func() { <-reserved }, nil
	default:
	}
	timer := time.NewTimer(g.wait)
	defer timer.Stop()
	select {
	case reserved <- struct{}{}:
		return func() { <-reserved }, nil
	case g.strangers <- struct{}{}:
		return func() { <-g.strangers; g.release(address, known) }, nil
	case <-timer.C:
		err = errNoTurn
	case <-ctx.Done():
		err = ctx.Err()
	}
	g.release(address, known)
	return nil, err
}

// hold counts one more stranger's sign-in from address, unless it already
// holds checksPerAddress.
func (g *signInGate) hold(address string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.byAddress[address] >= checksPerAddress {
		return false
	}
	g.byAddress[address]++
	return true
}

func (g *signInGate) release(address string, known bool) {
	if known {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.byAddress[address]--; g.byAddress[address] <= 0 {
		delete(g.byAddress, address)
	}
}
