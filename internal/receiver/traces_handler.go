package receiver

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"

	"github.com/dittolab/ditto/internal/otlpmap"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// otlpCodes maps HTTP statuses to the gRPC codes OTLP puts in a google.rpc.Status body.
var otlpCodes = map[int]int32{
	http.StatusBadRequest: 3, http.StatusUnauthorized: 16, http.StatusForbidden: 7,
	http.StatusRequestEntityTooLarge: 8, http.StatusUnsupportedMediaType: 3,
	http.StatusTooManyRequests: 8, http.StatusServiceUnavailable: 14,
}

// otlpRequest reads the parts every OTLP/HTTP endpoint shares: the encoding, the outcome of
// authentication (instrument's) and the (gunzipped, bounded) body. On failure it has answered
// and returns ok false.
func (s *Server) otlpRequest(w http.ResponseWriter, r *http.Request, authErr error) (body []byte, asJSON bool, code int, ok bool) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case "application/x-protobuf", "application/protobuf":
	case "application/json":
		asJSON = true
	default:
		return nil, false, writeOTLP(w, http.StatusUnsupportedMediaType, false, &spb.Status{Code: 3,
			Message: fmt.Sprintf("Content-Type %q: OTLP/HTTP takes application/x-protobuf or application/json", mt)}), false
	}
	if authErr != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="ditto"`)
		return nil, asJSON, s.failOTLP(w, asJSON, &exportError{http.StatusUnauthorized, authErr}), false
	}
	body, err := readBody(w, r, s.cfg.MaxBodyBytes)
	if err != nil {
		var he *httpError
		switch {
		case errors.Is(err, ErrTooLarge):
			return nil, asJSON, s.failOTLP(w, asJSON, &exportError{http.StatusRequestEntityTooLarge, err}), false
		case errors.As(err, &he):
			return nil, asJSON, s.failOTLP(w, asJSON, &exportError{he.code, err}), false
		}
		return nil, asJSON, s.failOTLP(w, asJSON, &exportError{http.StatusBadRequest, err}), false
	}
	return body, asJSON, 0, true
}

// failOTLP answers an export error as a google.rpc.Status, with Retry-After when the client
// should try again.
func (s *Server) failOTLP(w http.ResponseWriter, asJSON bool, e *exportError) int {
	if e.code == http.StatusTooManyRequests || e.code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", strconv.Itoa(int(s.retryAfter().Seconds())))
	}
	return writeOTLP(w, e.code, asJSON, &spb.Status{Code: otlpCodes[e.code], Message: e.err.Error()})
}

func (s *Server) handleTraces(w http.ResponseWriter, r *http.Request, p *Principal, authErr error) int {
	body, asJSON, code, ok := s.otlpRequest(w, r, authErr)
	if !ok {
		return code
	}
	decode := otlpmap.DecodeProto
	if asJSON {
		decode = otlpmap.DecodeJSON
	}
	req, err := decode(body)
	if err != nil {
		return s.failOTLP(w, asJSON, &exportError{http.StatusBadRequest, err})
	}
	resp, xerr := s.exportTraces(r.Context(), p, req)
	if xerr != nil {
		return s.failOTLP(w, asJSON, xerr)
	}
	return writeOTLP(w, http.StatusOK, asJSON, resp)
}

func (s *Server) handleLogs(w http.ResponseWriter, r *http.Request, p *Principal, authErr error) int {
	body, asJSON, code, ok := s.otlpRequest(w, r, authErr)
	if !ok {
		return code
	}
	decode := otlpmap.DecodeLogsProto
	if asJSON {
		decode = otlpmap.DecodeLogsJSON
	}
	req, err := decode(body)
	if err != nil {
		return s.failOTLP(w, asJSON, &exportError{http.StatusBadRequest, err})
	}
	resp, xerr := s.exportLogs(r.Context(), p, req)
	if xerr != nil {
		return s.failOTLP(w, asJSON, xerr)
	}
	return writeOTLP(w, http.StatusOK, asJSON, resp)
}

// writeOTLP answers in the request's encoding: an Export…ServiceResponse on success, a
// google.rpc.Status otherwise (OTLP/HTTP).
func writeOTLP(w http.ResponseWriter, code int, asJSON bool, m proto.Message) int {
	var b []byte
	if asJSON {
		w.Header().Set("Content-Type", "application/json")
		b, _ = protojson.Marshal(m)
	} else {
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ = proto.Marshal(m)
	}
	w.WriteHeader(code)
	_, _ = w.Write(b)
	return code
}
