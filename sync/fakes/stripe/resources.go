package stripe

import (
	"math/rand/v2"
	"strings"
)

// resource is all that tells customers and payment intents apart.
type resource struct {
	object   string // the object's "object": customer
	prefix   string // of its ids: cus
	path     string // under /v1: customers
	create   fields
	update   fields
	required []string             // create parameters that must be given
	filters  fields               // list filters beside limit and the cursors
	search   map[string]qField    // the query fields of its search
	refs     map[string]*resource // parameters naming another object, which must exist
	blank    func(id string, created int64) map[string]any
}

// address is Stripe's address hash.
var address = field{kind: kHash, sub: fields{
	"city": {}, "country": {}, "line1": {}, "line2": {}, "postal_code": {}, "state": {},
}}

// shipping is a name and an address to ship to.
var shipping = field{kind: kHash, sub: fields{
	"address": address, "name": {}, "phone": {}, "carrier": {}, "tracking_number": {},
}}

// created filters a list by creation time: created=T or created[gte]=T...
var created = field{kind: kHash, sub: fields{
	"gt": {kind: kInt}, "gte": {kind: kInt}, "lt": {kind: kInt}, "lte": {kind: kInt},
}}

var expand = field{kind: kList}

// Customer parameters, from https://docs.stripe.com/api/customers/create
// and https://docs.stripe.com/api/customers/update.
var customerParams = fields{
	"address": address, "balance": {kind: kInt}, "description": {}, "email": {max: 512},
	"expand": expand, "invoice_prefix": {max: 12}, "metadata": {kind: kMetadata},
	"name": {max: 256}, "next_invoice_sequence": {kind: kInt}, "phone": {max: 20},
	"preferred_locales": {kind: kList}, "shipping": shipping,
	"tax_exempt": {kind: kEnum, enum: []string{"none", "exempt", "reverse"}},
}

// customers: https://docs.stripe.com/api/customers. The object's fields are
// those of https://docs.stripe.com/api/customers/object, plus discount
// (nullable) which the OpenAPI definition of stripe-mock v0.203.0 also
// lists; the conformance test keeps the two in step.
var customers = &resource{
	object: "customer", prefix: "cus", path: "customers",
	create: customerParams, update: customerParams,
	filters: fields{"email": {max: 512}, "created": created, "test_clock": {}},
	search: map[string]qField{
		"created": qNumber, "email": qString, "metadata": qString, "name": qString, "phone": qString,
	},
	blank: func(id string, created int64) map[string]any {
		return map[string]any{
			"id": id, "object": "customer", "address": nil, "balance": 0, "created": created,
			"currency": nil, "default_source": nil, "delinquent": false, "description": nil,
			"discount": nil, "email": nil, "invoice_prefix": invoicePrefix(),
			"invoice_settings": map[string]any{"custom_fields": nil, "default_payment_method": nil,
				"footer": nil, "rendering_options": nil},
			"livemode": false, "metadata": map[string]any{}, "name": nil, "next_invoice_sequence": 1,
			"phone": nil, "preferred_locales": []any{}, "shipping": nil, "tax_exempt": "none", "test_clock": nil,
		}
	},
}

// PaymentIntent parameters, from https://docs.stripe.com/api/payment_intents/create
// and https://docs.stripe.com/api/payment_intents/update.
var paymentIntentParams = fields{
	"amount": {kind: kInt}, "currency": {max: 3}, "customer": {}, "description": {max: 1000},
	"expand": expand, "metadata": {kind: kMetadata}, "payment_method": {},
	"payment_method_types": {kind: kList}, "receipt_email": {},
	"setup_future_usage": {kind: kEnum, enum: []string{"off_session", "on_session"}},
	"shipping":           shipping, "statement_descriptor": {max: 22}, "statement_descriptor_suffix": {max: 22},
	"transfer_group": {},
	"capture_method": {kind: kEnum, enum: []string{"automatic", "automatic_async", "manual"}},
}

// paymentIntentCreate adds what only a create takes.
var paymentIntentCreate = with(paymentIntentParams, fields{
	"confirmation_method":       {kind: kEnum, enum: []string{"automatic", "manual"}},
	"automatic_payment_methods": {kind: kHash, sub: fields{"enabled": {kind: kBool}, "allow_redirects": {kind: kEnum, enum: []string{"always", "never"}}}},
})

// paymentIntents: https://docs.stripe.com/api/payment_intents. The
// object's fields are those of https://docs.stripe.com/api/payment_intents/object
// as the OpenAPI definition of stripe-mock v0.203.0 lists them (without
// the deprecated source, with the newer allowed_payment_method_types,
// customer_account, excluded_payment_method_types, managed_payments and
// payment_method_configuration_details, all nullable).
var paymentIntents = &resource{
	object: "payment_intent", prefix: "pi", path: "payment_intents",
	create: paymentIntentCreate, update: paymentIntentParams,
	required: []string{"amount", "currency"},
	refs:     map[string]*resource{"customer": customers},
	filters:  fields{"customer": {}, "created": created},
	search: map[string]qField{
		"amount": qNumber, "created": qNumber, "currency": qString, "customer": qString,
		"metadata": qString, "status": qString,
	},
	blank: func(id string, created int64) map[string]any {
		null := func(keys ...string) map[string]any {
			m := map[string]any{}
			for _, k := range keys {
				m[k] = nil
			}
			return m
		}
		o := null("allowed_payment_method_types", "application", "application_fee_amount",
			"automatic_payment_methods", "canceled_at", "cancellation_reason", "customer", "customer_account",
			"description", "excluded_payment_method_types", "last_payment_error", "latest_charge",
			"managed_payments", "next_action", "on_behalf_of", "payment_method",
			"payment_method_configuration_details", "processing", "receipt_email", "review",
			"setup_future_usage", "shipping", "statement_descriptor", "statement_descriptor_suffix",
			"transfer_data", "transfer_group")
		merge(o, map[string]any{
			"id": id, "object": "payment_intent", "amount": 0, "amount_capturable": 0,
			"amount_details": map[string]any{"tip": map[string]any{}}, "amount_received": 0,
			"capture_method": "automatic_async", "client_secret": id + "_secret_" + randomID(24),
			"confirmation_method": "automatic", "created": created, "currency": nil, "livemode": false,
			"metadata": map[string]any{}, "payment_method_options": map[string]any{},
			"payment_method_types": []string{"card"}, "status": "requires_payment_method",
		})
		return o
	},
}

// with returns base and more together.
func with(base, more fields) fields {
	out := make(fields, len(base)+len(more))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

// checkPaymentIntent applies what Stripe requires of an amount and a
// currency: "A positive integer representing how much to charge in the
// smallest currency unit" and a "Three-letter ISO currency code, in
// lowercase" (https://docs.stripe.com/api/payment_intents/create).
func checkPaymentIntent(v map[string]any) *apiError {
	if n, ok := v["amount"].(int64); ok && n < 1 {
		return invalidParam("amount", "parameter_invalid_integer", "This value must be greater than or equal to 1.")
	}
	if c, ok := v["currency"].(string); ok {
		if len(c) != 3 || strings.Trim(strings.ToLower(c), "abcdefghijklmnopqrstuvwxyz") != "" {
			return invalidParam("currency", "", "Invalid currency: %s. Stripe currencies are three-letter ISO codes, such as usd.", c)
		}
		v["currency"] = strings.ToLower(c)
	}
	return nil
}

const idChars = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// randomID is n characters such as Stripe's ids end with.
func randomID(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = idChars[rand.IntN(len(idChars))]
	}
	return string(b)
}

// invoicePrefix is "3–12 uppercase letters or numbers"; Stripe makes eight.
func invoicePrefix() string {
	return strings.ToUpper(randomID(8))
}
