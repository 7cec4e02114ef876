package notify_test

import (
	"encoding/base64"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/sync/notify"
)

// The signing secret of the tests' webhook channels: "whsec_" and 32 bytes.
var (
	hookKey    = []byte("0123456789abcdef0123456789abcdef")
	hookSecret = "whsec_" + base64.StdEncoding.EncodeToString(hookKey)
)

// message is a notification as sync/alerts would send it.
func message() notify.Message {
	return notify.Message{
		ID: "ntf_12_1", Incident: 12, Rule: "service_paused", Subject: "crm", State: notify.Opened,
		Title: "crm paused for 12 minutes",
		Text:  "The CRM has refused every call since 10:02. Check its status page, then resume it on the Services page.",
		URL:   "https://desk.example.com/services/crm",
		At:    time.Date(2026, 12, 1, 10, 14, 0, 0, time.UTC),
	}
}

// requirePermanent checks whether err says sending again cannot mend it.
func requirePermanent(t *testing.T, err error, permanent bool, msgAndArgs ...any) {
	t.Helper()
	require.Error(t, err, msgAndArgs...)
	require.Equal(t, permanent, errors.Is(err, notify.ErrPermanent), "is %q permanent? %v", err, msgAndArgs)
}
