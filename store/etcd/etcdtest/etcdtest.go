// Package etcdtest runs a real etcd server in process (go.etcd.io/etcd's
// embed) for tests of the etcd backend and of replicas on it.
package etcdtest

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Server is an etcd member serving clients on Endpoint.
type Server struct {
	Endpoint string
	etcd     *embed.Etcd
	dir      string
}

// Start starts a one-member etcd cluster with its data in a new
// temporary directory, ready for clients.
func Start() (*Server, error) {
	dir, err := os.MkdirTemp("", "switchboard-etcd-")
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	client, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", ports[0]))
	peer, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", ports[1]))
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*client}, []url.URL{*client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		e.Close()
		os.RemoveAll(dir)
		return nil, errors.New("etcd did not get ready within 30 s")
	}
	return &Server{Endpoint: client.String(), etcd: e, dir: dir}, nil
}

// Close stops the member and removes its data.
func (s *Server) Close() {
	s.etcd.Close()
	os.RemoveAll(s.dir)
}

// freePorts finds n ports free on the loopback now.
func freePorts(n int) ([]int, error) {
	var out []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}
