// Package deploy holds ditto's deployment files — the NATS cluster configurations (nats/,
// local/), the compose file, the Kubernetes manifests (k8s/) and the Dockerfile — and the
// tests that parse every one of them: YAML with gopkg.in/yaml.v3, NATS configurations with
// nats-server's own parser, so that a file that would not load is caught here and not at
// deployment time. It has no Go API; see README.md.
package deploy
