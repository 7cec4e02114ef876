package web

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/action"
	"github.com/syncdesk/syncdesk/sync/outbox"
)

// maxBatchBody bounds a batch's body: room for a full batch of ordinary
// records, and for a few near models.MaxPayload, which are refused one by
// one when they are over it rather than failing the batch.
const maxBatchBody = 16 << 20

// contentNDJSON is the media type of a batch sent as one record per line.
const contentNDJSON = "application/x-ndjson"

// batchRecordJSON is one record of a batch as the API takes it.
type batchRecordJSON struct {
	Type    string          `json:"type"`
	ID      string          `json:"id"`
	Payload json.RawMessage `json:"payload"`
	// Op is "delete" to delete the record; "" or "upsert" writes it.
	Op string `json:"op"`
}

// batchResultJSON says what became of one record of a batch.
type batchResultJSON struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	Result string `json:"result"` // changed, unchanged or refused
	Reason string `json:"reason,omitempty"`
}

// batchJSON is the answer to a batch: counts, then a result per record in
// the order they were sent.
type batchJSON struct {
	Records   int               `json:"records"`
	Changed   int               `json:"changed"`
	Unchanged int               `json:"unchanged"`
	Refused   int               `json:"refused"`
	Results   []batchResultJSON `json:"results"`
}

// apiPostRecords answers POST /api/v1/records: up to outbox.MaxBatch
// upserts (and deletes, with "op": "delete") in one transaction, as a JSON
// array or as NDJSON. A refused record
// is skipped and the others are stored; a database failure stores none of
// them (503). The same batch again changes nothing.
func (s *Server) apiPostRecords(c echo.Context) error {
	raws, err := readBatch(c.Request())
	if err != nil {
		return err
	}
	// A record that cannot be read goes to the engine without a type, which
	// it refuses too, so that the engine's answers line up with the body.
	results := make([]batchResultJSON, len(raws))
	unread := make([]error, len(raws))
	batch := make([]outbox.Incoming, len(raws))
	for i, raw := range raws {
		batch[i], unread[i] = decodeBatchRecord(raw)
		results[i] = batchResultJSON{Type: batch[i].Type, ID: batch[i].ID}
		if unread[i] != nil {
			batch[i] = outbox.Incoming{}
		}
	}
	applied, err := s.outbox.UpsertBatch(c.Request().Context(), batch)
	if err != nil {
		return err
	}
	out := batchJSON{Records: len(raws), Results: results}
	for i, a := range applied {
		switch refused := cmp.Or(unread[i], a.Refused); {
		case refused != nil:
			results[i].Result, results[i].Reason = "refused", refused.Error()
			out.Refused++
		case a.Changed:
			results[i].Result = "changed"
			out.Changed++
		default:
			results[i].Result = "unchanged"
			out.Unchanged++
		}
	}
	// Like a single PUT, a batch that changed nothing and refused nothing
	// leaves no entry: a replay is not news.
	if out.Changed+out.Refused > 0 {
		s.audit(c, action.RecordBulkUpsert, fmt.Sprintf("%d records", out.Records), models.OutcomeSuccess,
			fmt.Sprintf("%d changed, %d unchanged, %d refused", out.Changed, out.Unchanged, out.Refused))
	}
	return c.JSON(http.StatusOK, out)
}

// readBatch reads a batch's body into its records, each as sent: 413 over
// the size or count limits, 400 naming where the JSON breaks.
func readBatch(r *http.Request) ([]json.RawMessage, error) {
	media, err := bodyMedia(r, fmt.Sprintf("a batch is sent as %s (an array of records) or %s (one record per line)",
		echo.MIMEApplicationJSON, contentNDJSON), echo.MIMEApplicationJSON, contentNDJSON)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBatchBody+1))
	if err != nil {
		return nil, errBadRequest("could not read the request body")
	}
	if len(body) > maxBatchBody {
		return nil, &statusError{http.StatusRequestEntityTooLarge, fmt.Sprintf(
			"the body is larger than %d MiB, the most a batch may be; send fewer records per batch", maxBatchBody>>20)}
	}
	var raws []json.RawMessage
	if media == contentNDJSON {
		raws, err = splitNDJSON(body)
	} else {
		raws, err = splitArray(body)
	}
	if err != nil {
		return nil, err
	}
	if len(raws) > outbox.MaxBatch {
		return nil, tooManyRecords(fmt.Sprint(len(raws)))
	}
	if len(raws) == 0 {
		return nil, errBadRequest("the batch holds no records")
	}
	return raws, nil
}

func tooManyRecords(held string) error {
	return &statusError{http.StatusRequestEntityTooLarge, fmt.Sprintf(
		"a batch holds at most %d records; this one holds %s: send them in several batches", outbox.MaxBatch, held)}
}

// splitArray reads a JSON array into its elements.
func splitArray(body []byte) ([]json.RawMessage, error) {
	var raws []json.RawMessage
	err := json.Unmarshal(body, &raws)
	var syntax *json.SyntaxError
	switch {
	case errors.As(err, &syntax):
		line, col := position(body, syntax.Offset)
		msg := fmt.Sprintf("the body is not valid JSON at line %d, column %d: %s", line, col, syntax.Error())
		if bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
			msg += "; one record per line is sent with Content-Type " + contentNDJSON
		}
		return nil, errBadRequest(msg)
	case err != nil:
		return nil, errBadRequest("the body must be a JSON array of records, or one record per line with Content-Type " + contentNDJSON)
	}
	return raws, nil
}

// splitNDJSON reads one JSON value per line; blank lines are skipped. It
// stops at the first record past outbox.MaxBatch.
func splitNDJSON(body []byte) ([]json.RawMessage, error) {
	var raws []json.RawMessage
	for n, line := range bytes.Split(body, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if len(raws) == outbox.MaxBatch {
			return nil, tooManyRecords("more")
		}
		var raw json.RawMessage
		var syntax *json.SyntaxError
		if err := json.Unmarshal(line, &raw); errors.As(err, &syntax) {
			return nil, errBadRequest(fmt.Sprintf("line %d is not valid JSON at column %d: %s", n+1, syntax.Offset, syntax.Error()))
		}
		raws = append(raws, raw)
	}
	return raws, nil
}

// position turns a byte offset into a line and column, both from 1.
func position(body []byte, offset int64) (line, col int) {
	before := body[:min(max(offset, 0), int64(len(body)))]
	line = 1 + bytes.Count(before, []byte("\n"))
	return line, len(before) - bytes.LastIndexByte(before, '\n') - 1
}

// decodeBatchRecord reads one element of a batch. What it keeps of a record
// it refuses (type, id) is for the answer only.
func decodeBatchRecord(raw json.RawMessage) (outbox.Incoming, error) {
	if trimmed := bytes.TrimSpace(raw); len(trimmed) == 0 || trimmed[0] != '{' {
		return outbox.Incoming{}, models.Invalid(`a record must be a JSON object: {"type": …, "id": …, "payload": {…}}`)
	}
	var r batchRecordJSON
	err := json.Unmarshal(raw, &r)
	var wrong *json.UnmarshalTypeError
	if errors.As(err, &wrong) {
		return outbox.Incoming{Type: r.Type, ID: r.ID}, models.Invalid(fmt.Sprintf("the %s must be a JSON string", wrong.Field))
	}
	if err != nil {
		return outbox.Incoming{}, models.Invalid("the record cannot be read: " + err.Error())
	}
	in := outbox.Incoming{Type: r.Type, ID: r.ID, Payload: r.Payload}
	switch r.Op {
	case "", "upsert":
		return in, nil
	case "delete":
		if r.Payload != nil {
			return in, models.Invalid(`a delete carries no payload: {"type": …, "id": …, "op": "delete"}`)
		}
		in.Delete = true
		return in, nil
	}
	return in, models.Invalid(fmt.Sprintf(`the op must be "upsert" (the default) or "delete", not %q`, r.Op))
}
