package bus

import (
	"flag"
	"os"
	"strconv"
	"time"
)

// RegisterFlags binds the connection settings to fs, with defaults from the environment
// (DITTO_NATS_URL, DITTO_NATS_USER, DITTO_NATS_PASSWORD, DITTO_NATS_TOKEN, DITTO_NATS_CREDS,
// DITTO_DATA_DIR, DITTO_NATS_PORT, DITTO_REPLICAS, DITTO_DUPLICATE_WINDOW). Secrets are best given by environment: a
// flag value shows in the process list.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	env := os.Getenv
	fs.StringVar(&c.URL, "nats-url", env("DITTO_NATS_URL"), "NATS server URL(s); empty hosts or joins the embedded server for --data-dir")
	fs.StringVar(&c.User, "nats-user", env("DITTO_NATS_USER"), "NATS user")
	fs.StringVar(&c.Password, "nats-password", env("DITTO_NATS_PASSWORD"), "NATS password (prefer DITTO_NATS_PASSWORD)")
	fs.StringVar(&c.Token, "nats-token", env("DITTO_NATS_TOKEN"), "NATS token (prefer DITTO_NATS_TOKEN)")
	fs.StringVar(&c.CredsFile, "nats-creds", env("DITTO_NATS_CREDS"), "NATS credentials file")
	fs.StringVar(&c.TLSCert, "tls-cert", "", "client TLS certificate (PEM)")
	fs.StringVar(&c.TLSKey, "tls-key", "", "client TLS key (PEM)")
	fs.StringVar(&c.TLSCA, "tls-ca", "", "CA bundle to verify the NATS server (PEM)")
	dataDir := env("DITTO_DATA_DIR")
	if dataDir == "" {
		dataDir = DefaultDataDir
	}
	fs.StringVar(&c.DataDir, "data-dir", dataDir, "data directory (embedded NATS store, DuckDB file, reports)")
	fs.IntVar(&c.EmbeddedPort, "nats-port", envInt("DITTO_NATS_PORT", DefaultEmbeddedPort), "loopback port of the embedded server (-1: any free port)")
	fs.IntVar(&c.Replicas, "replicas", envInt("DITTO_REPLICAS", 1), "stream replicas (3 on a cluster)")
	fs.DurationVar(&c.DuplicateWindow, "duplicate-window", envDuration("DITTO_DUPLICATE_WINDOW", DefaultDuplicateWindow),
		"how long the streams drop a re-published Nats-Msg-Id; the broker keeps every id of the window in memory")
	fs.BoolVar(&c.SyncAlways, "sync-always", false, "embedded server: fsync every write (survives an OS crash; slower)")
}

func envDuration(name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}
