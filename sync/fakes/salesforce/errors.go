package salesforce

import (
	"encoding/json"
	"net/http"
)

// Salesforce answers a failed REST call with a JSON array of errors, each
// with a message, an errorCode and, when fields are at fault, their names.
// https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/errorcodes.htm

// apiError is one element of Salesforce's error array.
type apiError struct {
	Message   string   `json:"message"`
	ErrorCode string   `json:"errorCode"`
	Fields    []string `json:"fields,omitempty"`
}

// failure is an error answer: a status and the errors it carries.
type failure struct {
	status int
	errs   []apiError
}

// fail builds a failure of one error.
func fail(status int, code, message string, fields ...string) *failure {
	return &failure{status: status, errs: []apiError{{Message: message, ErrorCode: code, Fields: fields}}}
}

// notFound is the documented answer for an unknown object, record or
// external ID field ("Incorrect external ID field", dome_upsert.htm).
func notFound() *failure {
	return fail(http.StatusNotFound, "NOT_FOUND", "The requested resource does not exist")
}

// noSuchColumn is the answer for a field the object does not have.
func noSuchColumn(object, field string) *failure {
	return fail(http.StatusBadRequest, "INVALID_FIELD", "No such column '"+field+"' on sobject of type "+object, field)
}

// write sends f.
func (f *failure) write(w http.ResponseWriter) {
	writeJSON(w, f.status, f.errs)
}

// reply is f as a handler's answer.
func (f *failure) reply() (int, any) { return f.status, f.errs }

// writeJSON sends v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// FaultAnswer writes Salesforce's own error body for a fault the injector
// (sync/fakes/faults, Options.Answer) sends: 503 is SERVER_UNAVAILABLE; a
// refusal for too many requests is REQUEST_LIMIT_EXCEEDED, the code
// Salesforce gives when an org's API limit is spent (with 403 there; the
// status is the injector's choice).
// https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/errorcodes.htm
func FaultAnswer(w http.ResponseWriter, status int) {
	switch status {
	case http.StatusTooManyRequests, http.StatusForbidden:
		fail(status, "REQUEST_LIMIT_EXCEEDED", "TotalRequests Limit exceeded.").write(w)
	default:
		fail(status, "SERVER_UNAVAILABLE", "The server is unavailable to handle the request.").write(w)
	}
}
