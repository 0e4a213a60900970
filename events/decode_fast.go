package events

// Decode's fast path: the envelope and the payload of every known type read by hand with the
// scanner (no reflection, one pass), which costs a fraction of encoding/json's. Each function
// returns ok false for anything it does not decode exactly as encoding/json does, and Decode
// then decodes the same bytes with encoding/json. FuzzDecodeFast checks the two paths agree.

// scanEnvelope reads an envelope. Its payload aliases b.
func scanEnvelope(b []byte) (w wire, ok bool) {
	s := scanner{b: b}
	var seen uint32
	s.beginObject()
	for n, key := 0, []byte(nil); ; {
		if key = s.nextKey(&n); key == nil {
			break
		}
		switch string(key) {
		case "schema":
			s.once(&seen, 0)
			w.Schema = s.int()
		case "id":
			s.once(&seen, 1)
			w.ID = s.str()
		case "type":
			s.once(&seen, 2)
			w.Type = Type(s.str())
		case "time":
			s.once(&seen, 3)
			// encoding/json hands the literal to time.Time.UnmarshalJSON; so does this.
			if lit, clean := s.strLit(); !clean || w.Time.UnmarshalJSON(lit) != nil {
				s.fail()
			}
		case "study":
			s.once(&seen, 4)
			w.Study = s.str()
		case "run":
			s.once(&seen, 5)
			w.Run = s.str()
		case "attempt":
			s.once(&seen, 6)
			w.Attempt = s.int()
		case "seq":
			s.once(&seen, 7)
			w.Seq = s.int64()
		case "source":
			s.once(&seen, 8)
			w.Source = s.source()
		case "trace_id":
			s.once(&seen, 9)
			w.TraceID = s.str()
		case "span_id":
			s.once(&seen, 10)
			w.SpanID = s.str()
		case "ignorable":
			s.once(&seen, 11)
			w.Ignorable = s.bool()
		case "payload":
			s.once(&seen, 12)
			w.Payload = s.skip(0)
		default:
			s.fail()
		}
	}
	// Anything but white space after the object is for json.Decoder to judge (it accepts some).
	s.end()
	return w, !s.failed
}

func (s *scanner) source() (src Source) {
	var seen uint32
	s.beginObject()
	for n, key := 0, []byte(nil); ; {
		if key = s.nextKey(&n); key == nil {
			break
		}
		switch string(key) {
		case "kind":
			s.once(&seen, 0)
			src.Kind = SourceKind(s.str())
		case "id":
			s.once(&seen, 1)
			src.ID = s.str()
		default:
			s.fail()
		}
	}
	return src
}

// scanPayload reads the payload of a known type, or returns ok false.
func scanPayload(t Type, raw []byte) (p Payload, ok bool) {
	s := scanner{b: raw}
	switch t {
	case TypeStudyDefined:
		p = s.studyDefined()
	case TypeRunStarted:
		p = s.runStarted()
	case TypeRunFinished:
		p = s.runFinished()
	case TypePlanProposed:
		p = s.planProposed()
	case TypePlanAccepted:
		p = s.planAccepted()
	case TypePlanRejected:
		p = s.planRejected()
	case TypeStateEntered:
		p = s.stateEntered()
	case TypeStateExited:
		p = s.stateExited()
	case TypeModelCalled:
		p = s.modelCalled()
	case TypeToolCalled:
		p = s.toolCalled()
	case TypeToolRejected:
		p = s.toolRejected()
	case TypeToolReturned:
		p = s.toolReturned()
	case TypeOutputValidated:
		p = s.outputValidated()
	case TypeOutputInvalid:
		p = s.outputInvalid()
	case TypeRetryScheduled:
		p = s.retryScheduled()
	case TypeRunEscalated:
		p = s.runEscalated()
	case TypeReportPublished:
		p = s.reportPublished()
	default:
		return nil, false
	}
	s.end()
	if s.failed {
		return nil, false
	}
	return p, true
}

// members calls field with the key of every member of an object, fails on a repeated key,
// and fails when field reports the key unknown. field numbers the fields it knows, from 0.
func (s *scanner) members(field func(key string) int) {
	var seen uint32
	s.beginObject()
	for n, key := 0, []byte(nil); ; {
		if key = s.nextKey(&n); key == nil {
			return
		}
		bit := field(string(key))
		if bit < 0 {
			s.fail()
			return
		}
		s.once(&seen, uint(bit))
	}
}

func (s *scanner) studyDefined() Payload {
	var p StudyDefined
	s.members(func(key string) int {
		switch key {
		case "name":
			p.Name = s.str()
			return 0
		case "cells":
			p.Cells = []Cell{}
			s.beginArray()
			for n := 0; s.nextElem(&n); {
				p.Cells = append(p.Cells, s.cell())
			}
			return 1
		case "expected_runs":
			p.ExpectedRuns = s.int()
			return 2
		case "paired":
			p.Paired = s.bool()
			return 3
		case "simulated":
			p.Simulated = s.strs()
			return 4
		case "spec":
			p.Spec = s.raw()
			return 5
		}
		return -1
	})
	return p
}

func (s *scanner) cell() (c Cell) {
	s.members(func(key string) int {
		switch key {
		case "task":
			c.Task = s.str()
			return 0
		case "model":
			c.Model = s.str()
			return 1
		case "condition":
			c.Condition = s.str()
			return 2
		case "runs":
			c.Runs = s.int()
			return 3
		}
		return -1
	})
	return c
}

func (s *scanner) runStarted() Payload {
	var p RunStarted
	s.members(func(key string) int {
		switch key {
		case "task":
			p.Task = s.str()
			return 0
		case "instance":
			p.Instance = s.str()
			return 1
		case "input_index":
			p.InputIndex = s.int()
			return 2
		case "seed_index":
			p.SeedIndex = s.int()
			return 3
		case "model":
			p.Model = s.str()
			return 4
		case "condition":
			p.Condition = s.str()
			return 5
		case "components":
			p.Components = s.strs()
			return 6
		case "seed":
			v := s.int64()
			p.Seed = &v
			return 7
		case "sampling":
			p.Sampling = s.sampling()
			return 8
		case "endpoint":
			p.Endpoint = s.str()
			return 9
		case "simulated":
			p.Simulated = s.bool()
			return 10
		case "start":
			p.Start = s.str()
			return 11
		case "graph":
			p.Graph = s.graph()
			return 12
		}
		return -1
	})
	return p
}

func (s *scanner) sampling() (v Sampling) {
	s.members(func(key string) int {
		switch key {
		case "temperature":
			f := s.float64()
			v.Temperature = &f
			return 0
		case "top_p":
			f := s.float64()
			v.TopP = &f
			return 1
		case "max_tokens":
			v.MaxTokens = s.int()
			return 2
		}
		return -1
	})
	return v
}

// graph reads a state graph. As with encoding/json, a repeated state replaces the earlier one
// and a null list of successors is a nil slice.
func (s *scanner) graph() map[string][]string {
	g := map[string][]string{}
	s.beginObject()
	for n := 0; ; n++ {
		c := s.peek()
		if c == '}' {
			s.i++
			return g
		}
		if n > 0 {
			if c != ',' {
				s.fail()
				return nil
			}
			s.i++
		}
		k := s.str()
		s.expect(':')
		if s.peek() == 'n' {
			s.literal("null")
			g[k] = nil
		} else {
			g[k] = s.strs()
		}
		if s.failed {
			return nil
		}
	}
}

func (s *scanner) runFinished() Payload {
	var p RunFinished
	s.members(func(key string) int {
		switch key {
		case "status":
			p.Status = s.str()
			return 0
		case "output":
			p.Output = s.raw()
			return 1
		case "success":
			p.Success = s.bool()
			return 2
		case "totals":
			p.Totals = s.totals()
			return 3
		case "error":
			p.Error = s.str()
			return 4
		}
		return -1
	})
	return p
}

func (s *scanner) totals() (t Totals) {
	s.members(func(key string) int {
		switch key {
		case "prompt_tokens":
			t.PromptTokens = s.int64()
			return 0
		case "completion_tokens":
			t.CompletionTokens = s.int64()
			return 1
		case "model_calls":
			t.ModelCalls = s.int()
			return 2
		case "tool_calls":
			t.ToolCalls = s.int()
			return 3
		case "retries":
			t.Retries = s.int()
			return 4
		case "plan_reprompts":
			t.PlanReprompts = s.int()
			return 5
		case "rejected_tool_calls":
			t.RejectedToolCalls = s.int()
			return 6
		case "latency_ms":
			t.LatencyMS = s.float64()
			return 7
		}
		return -1
	})
	return t
}

func (s *scanner) planProposed() Payload {
	var p PlanProposed
	s.members(func(key string) int {
		switch key {
		case "text":
			p.Text = s.str()
			return 0
		case "attempt":
			p.Attempt = s.int()
			return 1
		case "structured":
			p.Structured = s.bool()
			return 2
		}
		return -1
	})
	return p
}

func (s *scanner) planAccepted() Payload {
	var p PlanAccepted
	s.members(func(key string) int {
		if key != "steps" {
			return -1
		}
		p.Steps = []PlanStep{}
		s.beginArray()
		for n := 0; s.nextElem(&n); {
			var st PlanStep
			s.members(func(key string) int {
				switch key {
				case "state":
					st.State = s.str()
					return 0
				case "tool":
					st.Tool = s.str()
					return 1
				}
				return -1
			})
			p.Steps = append(p.Steps, st)
		}
		return 0
	})
	return p
}

func (s *scanner) planRejected() Payload {
	var p PlanRejected
	s.members(func(key string) int {
		switch key {
		case "errors":
			p.Errors = s.strs()
			return 0
		case "attempt":
			p.Attempt = s.int()
			return 1
		}
		return -1
	})
	return p
}

func (s *scanner) stateEntered() Payload {
	var p StateEntered
	s.members(func(key string) int {
		switch key {
		case "state":
			p.State = s.str()
			return 0
		case "from":
			p.From = s.str()
			return 1
		}
		return -1
	})
	return p
}

func (s *scanner) stateExited() Payload {
	var p StateExited
	s.members(func(key string) int {
		switch key {
		case "state":
			p.State = s.str()
			return 0
		case "outcome":
			p.Outcome = s.str()
			return 1
		}
		return -1
	})
	return p
}

func (s *scanner) modelCalled() Payload {
	var p ModelCalled
	s.members(func(key string) int {
		switch key {
		case "model":
			p.Model = s.str()
			return 0
		case "purpose":
			p.Purpose = s.str()
			return 1
		case "prompt_tokens":
			p.PromptTokens = s.int64()
			return 2
		case "completion_tokens":
			p.CompletionTokens = s.int64()
			return 3
		case "latency_ms":
			p.LatencyMS = s.float64()
			return 4
		case "finish_reason":
			p.FinishReason = s.str()
			return 5
		case "fingerprint":
			p.Fingerprint = s.str()
			return 6
		case "seed":
			v := s.int64()
			p.Seed = &v
			return 7
		case "transport_retries":
			p.TransportRetries = s.int()
			return 8
		case "error":
			p.Error = s.str()
			return 9
		}
		return -1
	})
	return p
}

func (s *scanner) toolCalled() Payload {
	var p ToolCalled
	s.members(func(key string) int {
		switch key {
		case "call_id":
			p.CallID = s.str()
			return 0
		case "tool":
			p.Tool = s.str()
			return 1
		case "args":
			p.Args = s.raw()
			return 2
		case "state":
			p.State = s.str()
			return 3
		}
		return -1
	})
	return p
}

func (s *scanner) toolRejected() Payload {
	var p ToolRejected
	s.members(func(key string) int {
		switch key {
		case "call_id":
			p.CallID = s.str()
			return 0
		case "tool":
			p.Tool = s.str()
			return 1
		case "reason":
			p.Reason = s.str()
			return 2
		case "detail":
			p.Detail = s.str()
			return 3
		case "args":
			p.Args = s.raw()
			return 4
		case "state":
			p.State = s.str()
			return 5
		}
		return -1
	})
	return p
}

func (s *scanner) toolReturned() Payload {
	var p ToolReturned
	s.members(func(key string) int {
		switch key {
		case "call_id":
			p.CallID = s.str()
			return 0
		case "tool":
			p.Tool = s.str()
			return 1
		case "ok":
			p.OK = s.bool()
			return 2
		case "output":
			p.Output = s.raw()
			return 3
		case "error":
			p.Error = s.str()
			return 4
		case "duration_ms":
			p.DurationMS = s.float64()
			return 5
		}
		return -1
	})
	return p
}

func (s *scanner) outputValidated() Payload {
	var p OutputValidated
	s.members(func(key string) int {
		switch key {
		case "state":
			p.State = s.str()
			return 0
		case "tool":
			p.Tool = s.str()
			return 1
		}
		return -1
	})
	return p
}

func (s *scanner) outputInvalid() Payload {
	var p OutputInvalid
	s.members(func(key string) int {
		switch key {
		case "state":
			p.State = s.str()
			return 0
		case "tool":
			p.Tool = s.str()
			return 1
		case "errors":
			p.Errors = s.strs()
			return 2
		}
		return -1
	})
	return p
}

func (s *scanner) retryScheduled() Payload {
	var p RetryScheduled
	s.members(func(key string) int {
		switch key {
		case "state":
			p.State = s.str()
			return 0
		case "attempt":
			p.Attempt = s.int()
			return 1
		case "reason":
			p.Reason = s.str()
			return 2
		}
		return -1
	})
	return p
}

func (s *scanner) runEscalated() Payload {
	var p RunEscalated
	s.members(func(key string) int {
		switch key {
		case "reason":
			p.Reason = s.str()
			return 0
		case "state":
			p.State = s.str()
			return 1
		}
		return -1
	})
	return p
}

func (s *scanner) reportPublished() Payload {
	var p ReportPublished
	s.members(func(key string) int {
		switch key {
		case "name":
			p.Name = s.str()
			return 0
		case "path":
			p.Path = s.str()
			return 1
		case "formats":
			p.Formats = s.strs()
			return 2
		case "studies":
			p.Studies = s.strs()
			return 3
		case "alerts":
			p.Alerts = s.int()
			return 4
		}
		return -1
	})
	return p
}
