package hubspot

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
)

// apiError is HubSpot's error body: status, message, correlationId and
// category, with errors[] and context where an API adds detail
// (https://developers.hubspot.com/docs/faq/api-error-responses; category
// and errors[] per
// https://developers.hubspot.com/changelog/upcoming-changes-to-error-responses).
// The rate-limit fields errorType and policyName are the usage guidelines'
// (https://developers.hubspot.com/docs/developer-tooling/platform/usage-guidelines.md).
type apiError struct {
	Status        string              `json:"status"`
	Message       string              `json:"message"`
	CorrelationID string              `json:"correlationId"`
	Category      string              `json:"category,omitempty"`
	ErrorType     string              `json:"errorType,omitempty"`
	PolicyName    string              `json:"policyName,omitempty"`
	Context       map[string][]string `json:"context,omitempty"`
	Errors        []errorDetail       `json:"errors,omitempty"`
}

type errorDetail struct {
	Message string              `json:"message"`
	In      string              `json:"in,omitempty"`
	Code    string              `json:"code,omitempty"`
	Context map[string][]string `json:"context,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json;charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, status int, e apiError) {
	e.Status = "error"
	e.CorrelationID = correlationID()
	writeJSON(w, status, e)
}

// correlationID is a random UUID, the form HubSpot's correlationId takes.
func correlationID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func invalid(w http.ResponseWriter, message string, details ...errorDetail) {
	fail(w, http.StatusBadRequest, apiError{Message: message, Category: "VALIDATION_ERROR", Errors: details})
}

func notFound(w http.ResponseWriter) {
	fail(w, http.StatusNotFound, apiError{Message: "resource not found", Category: "OBJECT_NOT_FOUND"})
}

// unauthorized is HubSpot's answer to a request without a valid token.
func unauthorized(w http.ResponseWriter) {
	fail(w, http.StatusUnauthorized, apiError{
		Message:  "Authentication credentials not found. This API supports OAuth 2.0 authentication and you can find more details at https://developers.hubspot.com/docs/methods/auth/oauth-overview",
		Category: "INVALID_AUTHENTICATION",
	})
}

// clash is a unique value already held by another object.
type clash struct {
	prop, value, existingID string
}

// conflict is HubSpot's 409 for a taken unique value. For contacts' email
// HubSpot answers "Contact already exists. Existing ID: 123" with category
// CONFLICT and the id again in context.existingId (as captured from CRM v3
// in public connector fixtures); a later form reported on
// https://community.hubspot.com/t5/APIs-Integrations/Updated-409-Conflict-responses/m-p/951534
// adds, per property, "A contact with email x already exists. Existing
// ID: 123" in errors[] with "in": "email". HubSpot's pages do not spell out
// the body for a custom unique property; integrations match "Company
// already exists. Existing ID: " there, so the fake answers in the same
// form, naming the property in errors[].in. One outside report has seen a
// 400 there instead; the fake follows the 409 the connector adopts.
func conflict(w http.ResponseWriter, t *table, c clash) {
	fail(w, http.StatusConflict, apiError{
		Message:  fmt.Sprintf("%s already exists. Existing ID: %s", t.singular, c.existingID),
		Category: "CONFLICT",
		Context:  map[string][]string{"existingId": {c.existingID}},
		Errors: []errorDetail{{
			Message: fmt.Sprintf("A %s with %s %s already exists. Existing ID: %s", t.lowerSingular(), c.prop, c.value, c.existingID),
			In:      c.prop,
		}},
	})
}

// propertyErrors is HubSpot's 400 for property values it will not take:
// the message embeds the per-property verdicts as JSON, as HubSpot's does
// ("Property values were not valid: [{\"isValid\":false,...}]").
func propertyErrors(w http.ResponseWriter, bad []badProperty) {
	type verdict struct {
		IsValid bool   `json:"isValid"`
		Message string `json:"message"`
		Error   string `json:"error"`
		Name    string `json:"name"`
	}
	verdicts := make([]verdict, len(bad))
	details := make([]errorDetail, len(bad))
	for i, b := range bad {
		verdicts[i] = verdict{Message: b.message, Error: b.code, Name: b.name}
		details[i] = errorDetail{Message: b.message, Code: b.code, Context: map[string][]string{"propertyName": {b.name}}}
	}
	raw, _ := json.Marshal(verdicts)
	invalid(w, "Property values were not valid: "+string(raw), details...)
}

// Answer writes HubSpot's own body for a fault put in front of the fake
// (faults.Options.Answer): a 429 as the ten-secondly limit's, anything
// else in HubSpot's general error shape.
func Answer(w http.ResponseWriter, status int) {
	if status == http.StatusTooManyRequests {
		fail(w, status, rateLimited(policyTenSecondly))
		return
	}
	fail(w, status, apiError{Message: http.StatusText(status), Category: "INTERNAL_ERROR"})
}
