package web

import (
	"os"
	"testing"

	"github.com/syncdesk/syncdesk/web/browsertest"
)

// TestMain stops the Chromium the browser tests share once they are done.
func TestMain(m *testing.M) { os.Exit(browsertest.Run(m)) }
