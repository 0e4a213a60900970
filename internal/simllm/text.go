package simllm

import (
	"encoding/json"
	"fmt"
	"strings"
)

// wording picks a phrasing: the persona's usual one (the first option) unless the labelled
// draw says to vary, in which case any option, the usual one included, is equally likely.
func wording(d dice, label string, rate float64, options []string) string {
	if d.chance(label+"/vary", rate) {
		return options[d.pick(label+"/pick", len(options))]
	}
	return options[0]
}

// humanState turns "VALIDATE_DATA" into "validate data".
func humanState(s string) string {
	return strings.ToLower(strings.ReplaceAll(s, "_", " "))
}

var (
	planIntros = []string{
		"Plan:",
		"Here is my plan:",
		"I will proceed as follows:",
		"My approach:",
		"Steps I intend to take:",
		"To complete this task I will:",
		"Proposed plan of action:",
	}
	planClosings = []string{
		"",
		"I will then report the result.",
		"I will stop once the final step has succeeded.",
		"Each step uses the output of the previous one.",
		"If a step fails I will fix the input and retry it.",
	}
	stepPhrasings = []string{
		"%[1]s: call `%[2]s`.",
		"Call %[2]s to %[3]s.",
		"%[4]s using the %[2]s tool.",
		"Use `%[2]s` (%[3]s).",
		"%[4]s with %[2]s.",
		"Run %[2]s in order to %[3]s.",
	}
	prosePrefixes = []string{"First", "Then", "Next", "After that", "Finally"}
	descForms     = []string{
		" — %[1]s.",
		" (%[2]s).",
		", which will %[2]s.",
		"; this step is to %[2]s.",
		"%.0[1]s.", // no explanation
	}
	planRationales = []string{
		"I will work through the steps strictly in this order, since each one depends on the output of the one before, and use only the datasets named in the request.",
		"The order matters: every step needs the previous step's result, and I will not touch any dataset other than the one given.",
		"Following this sequence keeps the work auditable, and each result will be checked before moving on.",
		"I will keep to the given data and check each intermediate result before continuing.",
	}
)

// textPlan words a free-text plan of steps. rate is the persona's wording rate (scaled); skip
// is the chance, also scaled, that one intermediate step is left unmentioned.
func textPlan(d dice, rate, skip float64, steps []step) string {
	if len(steps) > 2 && d.chance("textplan/omit", skip) {
		i := 1 + d.pick("textplan/omit/which", len(steps)-2)
		steps = append(append([]step(nil), steps[:i]...), steps[i+1:]...)
	}
	intro := wording(d, "textplan/intro", rate, planIntros)
	layout := wording(d, "textplan/layout", rate, []string{"numbered", "bullets", "prose"})
	var lines []string
	for i, s := range steps {
		human := humanState(s.State)
		if human == "" {
			human = "run " + s.Tool
		}
		phr := wording(d, labelf("textplan/step", i), rate, stepPhrasings)
		line := fmt.Sprintf(phr, s.State, s.Tool, human, capitalise(human))
		if desc := strings.TrimSuffix(strings.TrimSpace(s.Desc), "."); desc != "" {
			form := wording(d, labelf("textplan/desc", i), rate, descForms)
			line = strings.TrimSuffix(line, ".") + fmt.Sprintf(form, desc, lowerFirst(desc))
		}
		switch layout {
		case "numbered":
			lines = append(lines, fmt.Sprintf("%d. %s", i+1, line))
		case "bullets":
			lines = append(lines, "- "+line)
		default:
			prefix := prosePrefixes[min(i, len(prosePrefixes)-2)]
			if i == len(steps)-1 && i > 0 {
				prefix = prosePrefixes[len(prosePrefixes)-1]
			}
			lines = append(lines, prefix+", "+lowerFirst(strings.TrimSuffix(line, "."))+".")
		}
	}
	sep := "\n"
	if layout == "prose" {
		sep = " "
	}
	out := intro + "\n" + strings.Join(lines, sep) + "\n" + wording(d, "textplan/rationale", rate, planRationales)
	if c := wording(d, "textplan/closing", rate, planClosings); c != "" {
		out += "\n" + c
	}
	return out
}

var (
	finalIntros = []string{
		"The task is complete.",
		"Done.",
		"All steps have been completed.",
		"I have finished the task.",
		"The work is finished.",
	}
	finalBodies = []string{
		"Final result from %[1]s: %[2]s",
		"%[1]s returned: %[2]s",
		"Here is the outcome (%[1]s): %[2]s",
		"Result: %[2]s",
	}
	earlyIntros = []string{
		"I believe I have what is needed.",
		"That should be sufficient.",
		"I think the task is complete.",
	}
)

// finalAnswer words the closing message after the last tool call. early marks an answer given
// before the task was actually finished (a persona stopping early).
func finalAnswer(d dice, rate float64, lastTool string, lastOutput json.RawMessage, early bool) string {
	intro := wording(d, "final/intro", rate, finalIntros)
	if early {
		intro = wording(d, "final/early", rate, earlyIntros)
	}
	if lastTool == "" {
		return intro
	}
	out := string(lastOutput)
	if len(out) > 600 {
		out = out[:600] + "…"
	}
	return intro + " " + fmt.Sprintf(wording(d, "final/body", rate, finalBodies), lastTool, out)
}

// nextStepText words a reply that names the next tool without calling it (tool_choice none,
// or a tool the request did not offer).
func nextStepText(d dice, rate float64, tool string, args string, offered bool) string {
	if !offered {
		return fmt.Sprintf(wording(d, "next/missing", rate, []string{
			"To continue I need the %s tool, which is not available here.",
			"I cannot proceed: the next step requires %s, but it was not offered.",
		}), tool)
	}
	return fmt.Sprintf(wording(d, "next/text", rate, []string{
		"The next step is to call %s with %s.",
		"Next I would call %s using %s.",
		"I would now run %s with the arguments %s.",
	}), tool, args)
}

func capitalise(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	// Keep tool names and state names (which start with a backtick or an upper-case word
	// followed by an underscore or colon) as they are.
	if s[0] == '`' || strings.IndexAny(strings.SplitN(s, " ", 2)[0], "_:") >= 0 {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}
