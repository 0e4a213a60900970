// Package repos holds the small Go repositories that coding runs work on, and their instances:
// each instance seeds one defect into a repository's correct base, adds the tests that fail
// because of it, and ships a catalogue of candidate patches (the fix, near misses, symptom
// patches, test weakenings) that the simulated coding personas choose among.
//
// The repositories are embedded as txtar archives (data/<repo>.txtar: the base tree, go.mod
// included — a directory with a go.mod could not be embedded from inside this module) and their
// instances as YAML (data/<repo>.yaml). Load checks every instance: each defect and candidate
// edit must replace text that occurs exactly once, as the agents' edit tool requires.
package repos
