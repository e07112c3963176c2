package etcdtest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Secure is what a client of a member started by StartSecure needs: the
// CA that signed the member's certificate, a client certificate and key
// the member trusts (as PEM files), and the password of its root user.
type Secure struct {
	CA, Cert, Key string
	User          string
	Password      string
}

// TLS is the client TLS configuration of s.
func (s Secure) TLS() (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(s.Cert, s.Key)
	if err != nil {
		return nil, err
	}
	pemCA, err := os.ReadFile(s.CA)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemCA)
	return &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// StartSecure starts a member that serves clients over TLS only, asks
// each for a certificate its CA signed, and has auth enabled with a root
// user (as a team's etcd is run).
func StartSecure() (*Server, Secure, error) {
	dir, err := os.MkdirTemp("", "switchboard-etcd-tls-")
	if err != nil {
		return nil, Secure{}, err
	}
	sec, serverCert, serverKey, err := makeCerts(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, sec, err
	}
	s, err := start(func(cfg *embedConfig) {
		cfg.ClientTLSInfo.CertFile, cfg.ClientTLSInfo.KeyFile = serverCert, serverKey
		cfg.ClientTLSInfo.TrustedCAFile, cfg.ClientTLSInfo.ClientCertAuth = sec.CA, true
	}, "https")
	if err != nil {
		os.RemoveAll(dir)
		return nil, sec, err
	}
	s.extra = dir
	sec.User, sec.Password = "root", "root-password-for-the-test"
	tlsCfg, err := sec.TLS()
	if err != nil {
		s.Close()
		return nil, sec, err
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{s.Endpoint}, TLS: tlsCfg, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		s.Close()
		return nil, sec, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, step := range []func() error{
		func() error { _, err := cli.UserAdd(ctx, sec.User, sec.Password); return err },
		func() error { _, err := cli.UserGrantRole(ctx, sec.User, "root"); return err },
		func() error { _, err := cli.AuthEnable(ctx); return err },
	} {
		if err := step(); err != nil {
			s.Close()
			return nil, sec, fmt.Errorf("enable auth: %w", err)
		}
	}
	return s, sec, nil
}

// makeCerts writes a CA, a server certificate for 127.0.0.1 and a client
// certificate, all signed by the CA, as PEM files in dir.
func makeCerts(dir string) (sec Secure, serverCert, serverKey string, err error) {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "switchboard test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return sec, "", "", err
	}
	write := func(name, kind string, der []byte) (string, error) {
		path := filepath.Join(dir, name)
		return path, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
	}
	if sec.CA, err = write("ca.pem", "CERTIFICATE", caDER); err != nil {
		return sec, "", "", err
	}
	leaf := func(name string, serial int64, usage x509.ExtKeyUsage) (cert, key string, err error) {
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			return "", "", err
		}
		keyDER, _ := x509.MarshalECPrivateKey(k)
		if cert, err = write(name+".pem", "CERTIFICATE", der); err != nil {
			return "", "", err
		}
		key, err = write(name+"-key.pem", "EC PRIVATE KEY", keyDER)
		return cert, key, err
	}
	if serverCert, serverKey, err = leaf("server", 2, x509.ExtKeyUsageServerAuth); err != nil {
		return sec, "", "", err
	}
	sec.Cert, sec.Key, err = leaf("client", 3, x509.ExtKeyUsageClientAuth)
	return sec, serverCert, serverKey, err
}
