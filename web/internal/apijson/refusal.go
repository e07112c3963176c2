package apijson

import (
	"encoding/json"
	"io"
	"net/http"
)

// Refusal is an error a handler returns to refuse a request: the status
// and a message fit to show (to the API's caller or on a page), and
// optionally one message per invalid field. The web server's error
// handler turns it into the answer ({"error": ..., "fields": {...}} in
// the API).
type Refusal struct {
	Status  int
	Message string
	Fields  map[string]string
}

func (e *Refusal) Error() string { return e.Message }

// Invalid is the 422 refusal of a request whose fields say why (field →
// message).
func Invalid(fields map[string]string) *Refusal {
	return &Refusal{Status: http.StatusUnprocessableEntity, Message: "validation failed", Fields: fields}
}

// DecodeStrict reads one JSON value from r into v: unknown fields and
// trailing data are a 400 refusal, as is JSON that does not parse.
func DecodeStrict(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &Refusal{Status: http.StatusBadRequest, Message: "invalid JSON body: " + err.Error()}
	}
	if dec.More() {
		return &Refusal{Status: http.StatusBadRequest, Message: "invalid JSON body: more than one value"}
	}
	return nil
}
