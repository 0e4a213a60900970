package simllm

import (
	"strings"

	"github.com/dittolab/ditto/internal/tasks"
)

// registeredTasks is every task of package tasks, in name order.
func registeredTasks() []*tasks.Task {
	var out []*tasks.Task
	for _, n := range tasks.Names() {
		if t, err := tasks.Get(n); err == nil {
			out = append(out, t)
		}
	}
	return out
}

// recognition is the task and instance a request is about, as far as the request tells.
type recognition struct {
	task *tasks.Task
	inst *tasks.Instance // nil when no instance prompt is in the conversation
	// prompt is what Ideal is given: the instance prompt when recognised, else the first user
	// message.
	prompt string
}

// recognise picks the task the request is about from evidence in the request only: the task's
// instructions or its name in a system message (strong), an instance prompt in a user or
// system message, and the overlap between the task's tool names and the tool names the request
// mentions (offered, forced or already called). Unrelated tool names count against a task, so
// two tasks sharing a tool name are told apart by the rest. Ties go to the first task in
// catalogue order; no evidence at all means no task.
func recognise(catalogue []*tasks.Task, c *conversation, toolNames []string) recognition {
	var best recognition
	bestScore := 0
	text := c.allText()
	system := strings.Join(c.system, "\n")
	for _, t := range catalogue {
		if t.Coding != nil {
			continue // answered from its catalogue (codingInstance), not by an ideal agent
		}
		score := 0
		if t.Instructions != "" && strings.Contains(system, t.Instructions) {
			score += 100
		}
		if containsWord(text, t.Name) {
			score += 50
		}
		own := map[string]bool{}
		for _, tool := range t.Tools {
			own[tool.Name] = true
		}
		for _, n := range toolNames {
			if own[n] {
				score += 10
			} else {
				score -= 10
			}
		}
		var inst *tasks.Instance
		for i := range t.Instances {
			p := t.Instances[i].Prompt
			if p != "" && strings.Contains(text, p) && (inst == nil || len(p) > len(inst.Prompt)) {
				inst = &t.Instances[i]
			}
		}
		if inst != nil {
			score += 30
		}
		if score > bestScore {
			bestScore = score
			best = recognition{task: t, inst: inst}
		}
	}
	switch {
	case best.inst != nil:
		best.prompt = best.inst.Prompt
	case len(c.users) > 0:
		best.prompt = c.users[0]
	}
	return best
}

// containsWord reports whether word occurs in text delimited by non-identifier characters.
func containsWord(text, word string) bool {
	if word == "" {
		return false
	}
	isIdent := func(c byte) bool {
		return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	for from := 0; from <= len(text)-len(word); {
		i := strings.Index(text[from:], word)
		if i < 0 {
			return false
		}
		start, end := from+i, from+i+len(word)
		if (start == 0 || !isIdent(text[start-1])) && (end == len(text) || !isIdent(text[end])) {
			return true
		}
		from = start + 1
	}
	return false
}
