package receiver

import (
	"context"
	"net/http"
	"strconv"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	_ "google.golang.org/grpc/encoding/gzip" // registers the gzip compressor: OTLP exporters may compress
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// GRPCServer returns the OTLP/gRPC server: the collector's TraceService and LogsService (what
// OpenTelemetry's gRPC exporters call, on port 4317 by default), with the same tokens
// (authorization metadata: "Bearer <token>"), limits and backpressure as OTLP/HTTP. A message
// over MaxBodyBytes is refused by gRPC itself (RESOURCE_EXHAUSTED); an export that finds no room
// or that JetStream does not acknowledge gets RESOURCE_EXHAUSTED or UNAVAILABLE with a RetryInfo
// detail, which OTLP exporters honour like HTTP's Retry-After. Requests gzip-compressed are read.
func (s *Server) GRPCServer() *grpc.Server {
	gs := grpc.NewServer(
		grpc.MaxRecvMsgSize(int(s.cfg.MaxBodyBytes)),
		// Twice the calls processed at once may be read per connection: the calls beyond
		// MaxConcurrent are refused by grpcInstrument (RESOURCE_EXHAUSTED, as HTTP's 429) rather
		// than queued in the transport where the exporter cannot tell it should back off.
		grpc.MaxConcurrentStreams(uint32(2*max(s.cfg.MaxConcurrent, 1))),
		grpc.UnaryInterceptor(s.grpcInstrument),
	)
	coltracepb.RegisterTraceServiceServer(gs, traceService{s: s})
	collogspb.RegisterLogsServiceServer(gs, logsService{s: s})
	return gs
}

type traceService struct {
	coltracepb.UnimplementedTraceServiceServer
	s *Server
}

func (t traceService) Export(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	p, err := t.s.grpcPrincipal(ctx)
	if err != nil {
		return nil, err
	}
	resp, xerr := t.s.exportTraces(ctx, p, req)
	if xerr != nil {
		return nil, t.s.grpcStatus(xerr)
	}
	return resp, nil
}

type logsService struct {
	collogspb.UnimplementedLogsServiceServer
	s *Server
}

func (l logsService) Export(ctx context.Context, req *collogspb.ExportLogsServiceRequest) (*collogspb.ExportLogsServiceResponse, error) {
	p, err := l.s.grpcPrincipal(ctx)
	if err != nil {
		return nil, err
	}
	resp, xerr := l.s.exportLogs(ctx, p, req)
	if xerr != nil {
		return nil, l.s.grpcStatus(xerr)
	}
	return resp, nil
}

// grpcPrincipal authenticates the call's authorization metadata.
func (s *Server) grpcPrincipal(ctx context.Context) (*Principal, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	var h string
	if v := md.Get("authorization"); len(v) > 0 {
		h = v[0]
	}
	p, err := s.auth.authenticateHeader(h)
	if err != nil {
		return nil, status.Error(codes.Unauthenticated, err.Error())
	}
	return p, nil
}

// grpcStatus maps an export error to its gRPC status, with RetryInfo when the client should
// try again (OTLP/gRPC retries RESOURCE_EXHAUSTED only when RetryInfo is present).
func (s *Server) grpcStatus(e *exportError) error {
	var c codes.Code
	retry := false
	switch e.code {
	case http.StatusBadRequest:
		c = codes.InvalidArgument
	case http.StatusUnauthorized:
		c = codes.Unauthenticated
	case http.StatusForbidden:
		c = codes.PermissionDenied
	case http.StatusRequestEntityTooLarge:
		c = codes.InvalidArgument
	case http.StatusTooManyRequests:
		c, retry = codes.ResourceExhausted, true
	case http.StatusServiceUnavailable:
		c, retry = codes.Unavailable, true
	default:
		c = codes.Internal
	}
	st := status.New(c, e.err.Error())
	if retry {
		if d, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(s.retryAfter())}); err == nil {
			st = d
		}
	}
	return st.Err()
}

// grpcInstrument counts calls like instrument counts HTTP requests (by endpoint and the HTTP
// status the outcome corresponds to) and bounds the calls processed at once: a call finding no
// room is refused before its work, RESOURCE_EXHAUSTED with RetryInfo.
func (s *Server) grpcInstrument(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	endpoint := "grpc_traces"
	if _, ok := req.(*collogspb.ExportLogsServiceRequest); ok {
		endpoint = "grpc_logs"
	}
	start := time.Now()
	var resp any
	var err error
	// A token holds at most MaxConcurrentPerToken calls, as over HTTP; a call that does not
	// authenticate goes on to be refused by its handler.
	p, perr := s.grpcPrincipal(ctx)
	switch {
	case perr == nil && !s.takeToken(p):
		s.throttled(endpoint, http.StatusTooManyRequests)
		err = s.grpcStatus(&exportError{http.StatusTooManyRequests, s.tokenBusy(p)})
	default:
		if perr == nil {
			defer s.releaseToken(p)
		}
		select {
		case s.conc <- struct{}{}:
			inProgress := s.m.inProgress.WithLabelValues(endpoint)
			inProgress.Inc()
			resp, err = handler(ctx, req)
			inProgress.Dec()
			<-s.conc
		default:
			s.throttled(endpoint, http.StatusTooManyRequests)
			err = s.grpcStatus(&exportError{http.StatusTooManyRequests, ErrThrottled})
		}
	}
	s.m.requests.WithLabelValues(endpoint, strconv.Itoa(httpOf(status.Code(err)))).Inc()
	s.m.duration.WithLabelValues(endpoint).Observe(time.Since(start).Seconds())
	return resp, err
}

// httpOf is the HTTP status a gRPC code stands for in the request counter.
func httpOf(c codes.Code) int {
	switch c {
	case codes.OK:
		return http.StatusOK
	case codes.InvalidArgument:
		return http.StatusBadRequest
	case codes.Unauthenticated:
		return http.StatusUnauthorized
	case codes.PermissionDenied:
		return http.StatusForbidden
	case codes.ResourceExhausted:
		return http.StatusTooManyRequests
	case codes.Unavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}
