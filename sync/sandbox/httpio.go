package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// MaxBody is the largest request body a provider reads; beyond it, 413.
const MaxBody = 1 << 20

const (
	defaultLimit = 100
	maxLimit     = 1000
)

// readObject reads the request body as one JSON object. It answers 400 or
// 413 itself and then reports false.
func readObject(w http.ResponseWriter, r *http.Request) (map[string]any, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, "body larger than 1 MiB")
		return nil, false
	case err != nil:
		writeError(w, http.StatusBadRequest, "read body: "+err.Error())
		return nil, false
	}
	var obj map[string]any
	if err := json.Unmarshal(body, &obj); err != nil {
		writeError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error())
		return nil, false
	}
	if obj == nil {
		writeError(w, http.StatusBadRequest, "body must be a JSON object")
		return nil, false
	}
	return obj, true
}

// parseLimit reads ?limit=: default 100, at most 1000 (more is cut down,
// as most real APIs do, rather than refused).
func parseLimit(s string) (int, error) {
	if s == "" {
		return defaultLimit, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("invalid limit %q", s)
	}
	return min(n, maxLimit), nil
}

// writeError answers {"error": msg}, the one error shape of both providers.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeRaw(w, status, mustJSON(map[string]string{"error": msg}))
}

func writeRaw(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body) // a client that left cannot be told anything
}
