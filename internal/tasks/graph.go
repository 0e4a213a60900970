package tasks

import "fmt"

// StateByName returns the state with the given name.
func (t *Task) StateByName(name string) (*State, bool) {
	for i := range t.States {
		if t.States[i].Name == name {
			return &t.States[i], true
		}
	}
	return nil, false
}

// ToolByName returns the tool with the given name.
func (t *Task) ToolByName(name string) (*Tool, bool) {
	for i := range t.Tools {
		if t.Tools[i].Name == name {
			return &t.Tools[i], true
		}
	}
	return nil, false
}

// StateOfTool returns the state that authorizes the given tool. Every tool of a registered
// task is authorized in exactly one state.
func (t *Task) StateOfTool(tool string) (*State, bool) {
	for i := range t.States {
		if t.States[i].Tool == tool {
			return &t.States[i], true
		}
	}
	return nil, false
}

// Instance returns instance i, or an error naming the valid range.
func (t *Task) Instance(i int) (*Instance, error) {
	if i < 0 || i >= len(t.Instances) {
		return nil, fmt.Errorf("tasks: %s has no instance %d (have %d)", t.Name, i, len(t.Instances))
	}
	return &t.Instances[i], nil
}

// Terminal reports whether the state has no successors.
func (s *State) Terminal() bool { return len(s.Next) == 0 }

// Allows reports whether next is an allowed successor of s.
func (s *State) Allows(next string) bool {
	for _, n := range s.Next {
		if n == next {
			return true
		}
	}
	return false
}

// Successor returns the state that follows s once its tool returned output: the single entry of
// Next, Route's choice when Next has several, or "" when s is terminal.
func (s *State) Successor(output []byte) (string, error) {
	switch {
	case len(s.Next) == 0:
		return "", nil
	case len(s.Next) == 1:
		return s.Next[0], nil
	case s.Route == nil:
		return "", fmt.Errorf("tasks: state %s branches but has no Route", s.Name)
	}
	next, err := s.Route(output)
	if err != nil {
		return "", fmt.Errorf("tasks: route from %s: %w", s.Name, err)
	}
	if !s.Allows(next) {
		return "", fmt.Errorf("tasks: route from %s chose %q, not a successor", s.Name, next)
	}
	return next, nil
}

// Validate checks the task's own consistency: a known start state, every state's tool defined,
// every successor defined, every branching state routed, every tool authorized in exactly one
// state, a final tool, and every state reachable from Start can reach a terminal state.
func (t *Task) Validate() error {
	if t.Coding != nil {
		return t.validateCoding()
	}
	if _, ok := t.StateByName(t.Start); !ok {
		return fmt.Errorf("tasks: %s: unknown start state %q", t.Name, t.Start)
	}
	seen := map[string]int{}
	for _, s := range t.States {
		if _, ok := t.ToolByName(s.Tool); !ok {
			return fmt.Errorf("tasks: %s: state %s names unknown tool %q", t.Name, s.Name, s.Tool)
		}
		seen[s.Tool]++
		for _, n := range s.Next {
			if _, ok := t.StateByName(n); !ok {
				return fmt.Errorf("tasks: %s: state %s has unknown successor %q", t.Name, s.Name, n)
			}
		}
		if len(s.Next) > 1 && s.Route == nil {
			return fmt.Errorf("tasks: %s: state %s branches without Route", t.Name, s.Name)
		}
		if s.Validate == nil {
			return fmt.Errorf("tasks: %s: state %s has no validator", t.Name, s.Name)
		}
	}
	for _, tool := range t.Tools {
		if seen[tool.Name] != 1 {
			return fmt.Errorf("tasks: %s: tool %s is authorized in %d states, want 1", t.Name, tool.Name, seen[tool.Name])
		}
		if tool.Exec == nil || tool.Resources == nil || len(tool.Schema) == 0 {
			return fmt.Errorf("tasks: %s: tool %s is incomplete", t.Name, tool.Name)
		}
	}
	if _, ok := t.ToolByName(t.FinalTool); !ok {
		return fmt.Errorf("tasks: %s: unknown final tool %q", t.Name, t.FinalTool)
	}
	if t.Check == nil || len(t.Instances) == 0 {
		return fmt.Errorf("tasks: %s: missing Check or instances", t.Name)
	}
	return nil
}
