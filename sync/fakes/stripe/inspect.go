package stripe

// Object types, as their "object" field names them.
const (
	Customer      = "customer"
	PaymentIntent = "payment_intent"
)

// resourceOf finds the resource of an object type.
func resourceOf(typ string) *resource {
	for _, res := range []*resource{customers, paymentIntents} {
		if res.object == typ {
			return res
		}
	}
	panic("stripe fake: no object type " + typ + " (use stripe.Customer or stripe.PaymentIntent)")
}

// Objects returns copies of the objects of one type (Customer,
// PaymentIntent) as they are now, oldest first.
func (s *Server) Objects(typ string) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tables[resourceOf(typ)]
	out := make([]map[string]any, len(t.order))
	for i, rec := range t.order {
		out[i] = deepCopy(rec.obj).(map[string]any)
	}
	return out
}

// CountByMetadata counts the objects of one type whose metadata[key] is
// value: how many remote objects carry one of our keys.
func (s *Server) CountByMetadata(typ, key, value string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, rec := range s.tables[resourceOf(typ)].order {
		if m, _ := rec.obj["metadata"].(map[string]any); m[key] == value {
			n++
		}
	}
	return n
}

// Creates returns how many objects of one type were created.
func (s *Server) Creates(typ string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.creates[typ]
}

// Replays returns how many requests were answered with a saved answer
// under their idempotency key.
func (s *Server) Replays() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.replays
}

// Requests returns how many requests reached each endpoint, by route
// ("POST /v1/customers", "GET /v1/customers/{id}", "GET /v1/customers/search";
// "METHOD (unrecognized)" for the rest), refused ones included.
func (s *Server) Requests() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.requests))
	for k, v := range s.requests {
		out[k] = v
	}
	return out
}
