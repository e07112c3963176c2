package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/etcd"
)

// storeConfig says where the catalog lives: the embedded bbolt file
// (-db), or an etcd cluster (-store etcd://host:2379[,host:2379…]) that
// several replicas share.
type storeConfig struct {
	// Store is "" for the bbolt file, or an etcd:// URL.
	Store string
	// The etcd options: TLS client certificate and key, the cluster's CA,
	// etcd auth, and the key prefix.
	ETCDCert, ETCDKey, ETCDCA string
	ETCDUser, ETCDPassword    string
	ETCDPrefix                string
	// ETCDInsecure: speak to etcd without TLS, which is refused otherwise.
	ETCDInsecure bool
	// LeaseTTL is how long (seconds) a replica that died or lost etcd
	// keeps its leadership and claims.
	LeaseTTL int
}

// storeFlags adds -store and the -etcd-* flags to fs, with environment
// fallbacks read from getenv.
func storeFlags(fs *flag.FlagSet, c *storeConfig, getenv func(string) string) {
	c.Store = getenv("SWITCHBOARD_STORE")
	fs.StringVar(&c.Store, "store", c.Store, "where the catalog lives: empty for the database file (-db), or etcd://host:2379[,host:2379…] for an etcd cluster that several replicas share (env SWITCHBOARD_STORE)")
	etcdFlags(fs, c, getenv)
	c.LeaseTTL = etcd.DefaultLeaseTTL
	fs.IntVar(&c.LeaseTTL, "lease-ttl", c.LeaseTTL, "seconds a replica that died or lost etcd keeps its leadership (the refresher, the watches) and its verifications' claims: another takes over after it")
}

// etcdFlags adds the -etcd-* flags to fs, with environment fallbacks
// read from getenv.
func etcdFlags(fs *flag.FlagSet, c *storeConfig, getenv func(string) string) {
	c.ETCDCert, c.ETCDKey, c.ETCDCA = getenv("SWITCHBOARD_ETCD_CERT"), getenv("SWITCHBOARD_ETCD_KEY"), getenv("SWITCHBOARD_ETCD_CA")
	c.ETCDUser, c.ETCDPassword = getenv("SWITCHBOARD_ETCD_USER"), getenv("SWITCHBOARD_ETCD_PASSWORD")
	c.ETCDPrefix = getenv("SWITCHBOARD_ETCD_PREFIX")
	fs.StringVar(&c.ETCDCert, "etcd-cert", c.ETCDCert, "TLS client certificate (PEM) for etcd; with -etcd-key (env SWITCHBOARD_ETCD_CERT)")
	fs.StringVar(&c.ETCDKey, "etcd-key", c.ETCDKey, "TLS client key (PEM) for etcd (env SWITCHBOARD_ETCD_KEY)")
	fs.StringVar(&c.ETCDCA, "etcd-ca", c.ETCDCA, "CA certificate (PEM) that signed etcd's server certificates; setting it, or a client certificate, speaks TLS (env SWITCHBOARD_ETCD_CA)")
	fs.StringVar(&c.ETCDUser, "etcd-user", c.ETCDUser, "etcd user, when etcd has auth enabled (env SWITCHBOARD_ETCD_USER; the password only in SWITCHBOARD_ETCD_PASSWORD)")
	fs.StringVar(&c.ETCDPrefix, "etcd-prefix", c.ETCDPrefix, "key prefix of this Switchboard in etcd (default /switchboard/) (env SWITCHBOARD_ETCD_PREFIX)")
	c.ETCDInsecure = getenv("SWITCHBOARD_ETCD_INSECURE") == "1"
	fs.BoolVar(&c.ETCDInsecure, "etcd-insecure", c.ETCDInsecure, "speak to etcd without TLS: the catalog, its tokens and secrets cross the network readable (env SWITCHBOARD_ETCD_INSECURE=1); refused without it")
}

// isETCD reports whether the catalog is on etcd.
func (c storeConfig) isETCD() bool { return c.Store != "" }

// etcdOptions checks the -store URL and the -etcd-* flags and returns
// the connection's options.
func (c storeConfig) etcdOptions(log *slog.Logger) (etcd.Options, error) {
	rest, ok := strings.CutPrefix(c.Store, "etcd://")
	if !ok || rest == "" {
		return etcd.Options{}, usageError("-store %q: want etcd://host:2379[,host:2379…] (or nothing, for the database file)", c.Store)
	}
	scheme := "http://"
	tlsCfg, err := c.tlsConfig()
	if err != nil {
		return etcd.Options{}, err
	}
	if tlsCfg != nil {
		scheme = "https://"
	}
	opts := etcd.Options{TLS: tlsCfg, Username: c.ETCDUser, Password: c.ETCDPassword, Prefix: c.ETCDPrefix, Logger: log}
	for _, h := range strings.Split(rest, ",") {
		h = strings.TrimSpace(strings.TrimSuffix(h, "/"))
		if h == "" || strings.ContainsAny(h, "/?#@ ") {
			return etcd.Options{}, usageError("-store %q: %q is not host:port", c.Store, h)
		}
		opts.Endpoints = append(opts.Endpoints, scheme+h)
	}
	if (c.ETCDUser == "") != (c.ETCDPassword == "") {
		return etcd.Options{}, usageError("etcd auth needs both -etcd-user and SWITCHBOARD_ETCD_PASSWORD")
	}
	switch {
	case tlsCfg != nil:
	case !c.ETCDInsecure:
		return etcd.Options{}, usageError("-store %s without TLS: the catalog, with every server's secrets, its OAuth tokens and the MCP token, would cross the network readable by anyone on the path; give -etcd-ca (and -etcd-cert/-etcd-key), or -etcd-insecure to run so anyway", c.Store)
	case log != nil:
		log.Warn("ETCD WITHOUT TLS (-etcd-insecure): the catalog, every server's secrets, OAuth tokens and the MCP token cross the network readable", "store", c.Store)
	}
	return opts, nil
}

// tlsConfig is the TLS of the etcd connection, or nil for none.
func (c storeConfig) tlsConfig() (*tls.Config, error) {
	if c.ETCDCert == "" && c.ETCDKey == "" && c.ETCDCA == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if (c.ETCDCert == "") != (c.ETCDKey == "") {
		return nil, usageError("-etcd-cert and -etcd-key go together")
	}
	if c.ETCDCert != "" {
		pair, err := tls.LoadX509KeyPair(c.ETCDCert, c.ETCDKey)
		if err != nil {
			return nil, usageError("-etcd-cert/-etcd-key: %v", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	if c.ETCDCA != "" {
		pem, err := os.ReadFile(c.ETCDCA)
		if err != nil {
			return nil, usageError("-etcd-ca: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, usageError("-etcd-ca %s holds no PEM certificate", c.ETCDCA)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// openETCD connects to the cluster the flags name.
func (c storeConfig) openETCD(ctx context.Context, log *slog.Logger) (*etcd.DB, error) {
	opts, err := c.etcdOptions(log)
	if err != nil {
		return nil, err
	}
	db, err := etcd.Open(ctx, opts)
	if err != nil {
		if errors.Is(err, etcd.ErrUnavailable) {
			return nil, fmt.Errorf("%w (at %s)", err, strings.Join(opts.Endpoints, ", "))
		}
		return nil, err
	}
	return db, nil
}

var _ store.Store = (*etcd.DB)(nil)
