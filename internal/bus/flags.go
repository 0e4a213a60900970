package bus

import (
	"flag"

	"github.com/dittolab/ditto/internal/cli"
)

// RegisterFlags binds the connection settings to fs, each with its environment variable
// (DITTO_NATS_URL, DITTO_NATS_USER, DITTO_NATS_PASSWORD, DITTO_NATS_TOKEN, DITTO_NATS_CREDS,
// DITTO_DATA_DIR, DITTO_NATS_PORT, DITTO_REPLICAS, DITTO_DUPLICATE_WINDOW), which cli.Parse
// applies. Secrets are best given by environment: a flag value shows in the process list.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	cli.URL(fs, &c.URL, "nats-url", "DITTO_NATS_URL", "", "NATS server URL(s); empty hosts or joins the embedded server for --data-dir")
	cli.String(fs, &c.User, "nats-user", "DITTO_NATS_USER", "", "NATS user")
	cli.Secret(fs, &c.Password, "nats-password", "DITTO_NATS_PASSWORD", "NATS password")
	cli.Secret(fs, &c.Token, "nats-token", "DITTO_NATS_TOKEN", "NATS token")
	cli.String(fs, &c.CredsFile, "nats-creds", "DITTO_NATS_CREDS", "", "NATS credentials file (JWT and nkey seed)")
	fs.StringVar(&c.TLSCert, "tls-cert", "", "client TLS certificate (PEM)")
	fs.StringVar(&c.TLSKey, "tls-key", "", "client TLS key (PEM)")
	fs.StringVar(&c.TLSCA, "tls-ca", "", "CA bundle to verify the NATS server (PEM)")
	cli.String(fs, &c.DataDir, "data-dir", "DITTO_DATA_DIR", DefaultDataDir, "data directory (embedded NATS store, DuckDB file, reports)")
	cli.Int(fs, &c.EmbeddedPort, "nats-port", "DITTO_NATS_PORT", DefaultEmbeddedPort, "loopback port of the embedded server (-1: any free port)")
	cli.Int(fs, &c.Replicas, "replicas", "DITTO_REPLICAS", 1, "stream replicas (3 on a cluster)")
	cli.Duration(fs, &c.DuplicateWindow, "duplicate-window", "DITTO_DUPLICATE_WINDOW", DefaultDuplicateWindow,
		"how long the streams drop a re-published Nats-Msg-Id; the broker keeps every id of the window in memory")
	fs.BoolVar(&c.SyncAlways, "sync-always", false, "embedded server: fsync every write (survives an OS crash; slower)")
}
