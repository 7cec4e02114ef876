package verify

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// HubSpot's v3 signature, as documented in "Validating requests":
// https://developers.hubspot.com/docs/apps/developer-platform/build-apps/authentication/request-validation
// (and the changelog that introduced it:
// https://developers.hubspot.com/changelog/introducing-version-3-of-webhook-signatures).
// X-HubSpot-Signature-v3 is base64(HMAC-SHA256(client secret,
// method + URI + body + timestamp)), where URI is the full URL HubSpot called
// with the characters of hubspotURIDecoder URL-decoded, and
// X-HubSpot-Request-Timestamp is milliseconds since the epoch; a request
// older than five minutes is to be refused.

// hubspotURIDecoder decodes exactly the characters HubSpot's table lists,
// in the upper-case form it lists; any other escape stays as sent.
var hubspotURIDecoder = strings.NewReplacer(
	"%3A", ":", "%2F", "/", "%3F", "?", "%40", "@", "%21", "!", "%24", "$",
	"%27", "'", "%28", "(", "%29", ")", "%2A", "*", "%2C", ",", "%3B", ";",
)

func verifyHubSpot(cfg Config, req Request, h http.Header, body []byte, now time.Time) (Event, error) {
	sig, ts := h.Get("X-HubSpot-Signature-v3"), h.Get("X-HubSpot-Request-Timestamp")
	switch {
	case req.Method == "" || req.URL == "":
		// The caller's fault, not HubSpot's: a 5xx, and HubSpot sends again.
		return Event{}, fmt.Errorf("%w: the hubspot scheme signs the request's method and URL, and none was given", ErrBadConfig)
	case sig == "":
		return Event{}, fmt.Errorf("%w: no X-HubSpot-Signature-v3 header", ErrMissingSignature)
	case ts == "":
		return Event{}, fmt.Errorf("%w: no X-HubSpot-Request-Timestamp header", ErrMissingSignature)
	}
	t, err := parseUnixMilli(ts)
	if err != nil {
		return Event{}, err
	}
	uri := hubspotURIDecoder.Replace(req.URL)
	if err := checkOne(cfg.Secrets, "base64", sig, []byte(req.Method), []byte(uri), body, []byte(ts)); err != nil {
		return Event{}, err
	}
	if err := checkFresh(t, now, cfg.tolerance()); err != nil {
		return Event{}, err
	}
	// The body is a list of events, each with its own eventId: the
	// inbox splits it and reads each one's id and type.
	return Event{Timestamp: t}, nil
}

// parseUnixMilli parses a timestamp in milliseconds since the epoch, within
// the same bounds as parseUnix.
func parseUnixMilli(s string) (time.Time, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > maxUnix*1000 || n < -maxUnix*1000 {
		return time.Time{}, fmt.Errorf("%w: timestamp is not milliseconds since the epoch", ErrBadSignature)
	}
	return time.UnixMilli(n).UTC(), nil
}
