// Package study turns a study spec into run jobs.
//
// A spec (JSON, see Spec) names tasks × models × conditions × N runs, the endpoints that serve
// the models, pinned sampling parameters, seeds, the input instances to cycle through, whether
// runs are paired across conditions, and custom conditions as named sets of harness components.
// Parse decodes and validates it, reporting every problem with the field at fault
// (*ValidationError of *FieldError). Expand makes the Plan: one Job per run, with a
// deterministic run id, plus the study.defined event payload carrying the matrix and the
// expected run count. Submit publishes a plan on JetStream idempotently.
//
// # Determinism of the expansion
//
// The same spec always expands to the same jobs, byte for byte: run ids are
// <cell hash>-<run index>, the cell hash being the first 10 hex digits of SHA-256 over
// (study, task, model, condition). The job of run i of a cell uses seed index i and input
// instance inputs[i mod len(inputs)] when runs are paired (the default), so run i of every
// condition of a (task, model) sees the same input and the same seed; unpaired, the seed index
// is unique across the whole study (cell offset + i) and the input is inputs[seed index mod
// len(inputs)]. The per-run seed is seeds.base + seed
// index ("per_run"), seeds.base for every run ("fixed"), or none ("none"). Jobs are ordered by
// run index first and cell second, so that a study interrupted half-way has every cell at
// about the same progress and slow drifts of an endpoint hit every condition alike.
//
// # Idempotent submission
//
// Every job is published with Nats-Msg-Id "<study>/<run>", so within the jobs stream's
// duplicate window a second submission stores nothing. Beyond it, Submit first looks for the
// study's study.defined event in DITTO_EVENTS: if the same spec was already submitted it
// publishes nothing and says so; if a different spec was submitted under the same name it
// refuses (ErrStudyExists). Jobs are published before study.defined, so a submission that
// failed half-way can simply be repeated.
//
// # Secrets
//
// An endpoint names the environment variable that holds its API key (api_key_env), never the
// key: the spec has no field for one, so a spec containing "api_key" fails to parse. Jobs and
// events carry the variable's name only; the worker reads the key from its own environment, and
// only from a variable its operator allows, to send it only to a base URL its operator allows
// (EndpointPolicy: harness-worker run --key-envs and --base-urls). A spec outside the policy
// is refused by `producer study validate` and `submit` when given the workers' policy, and by
// every worker in any case (the run errors, its key never read).
package study
