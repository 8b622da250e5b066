package broker

import (
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/gmq/gmq/serverset"
)

// endpointNames are the names a front end's port has in a server set's
// additional endpoints (kestrel's memcache port is "memcache", as Finagle's
// kestrel clients name it); the metrics' own port is not advertised.
var endpointNames = map[string]string{"http": "http", "beanstalk": "beanstalk", "rpc": "rpc", "kestrel": "memcache", "text": "text", "thrift": "thrift"}

// newServerSet builds the broker's ZooKeeper membership ([zookeeper]),
// once its listeners are open, so that it advertises the ports they took:
// the memcache port as the service endpoint (kestrel's own), HTTP's when
// memcache is off, and every port as an additional endpoint. nil when
// [zookeeper] hosts is empty.
func (b *Broker) newServerSet() (*serverset.ServerSet, error) {
	cfg := b.cfg
	if len(cfg.ZooKeeperHosts) == 0 {
		return nil, nil
	}
	host := cfg.ZooKeeperAdvertiseHost
	if host == "" {
		name, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("[zookeeper] advertise_host is empty and this machine's name is unknown: %w", err)
		}
		host = name
	}
	ports := map[string]int{}
	for _, f := range b.fronts {
		name, ok := endpointNames[f.name]
		if !ok {
			continue
		}
		_, port, err := net.SplitHostPort(f.ln.Addr().String())
		if err != nil {
			return nil, fmt.Errorf("the %s listener's address: %w", f.name, err)
		}
		if ports[name], err = strconv.Atoi(port); err != nil {
			return nil, fmt.Errorf("the %s listener's port: %w", f.name, err)
		}
	}
	main := serverset.Endpoint{Name: "memcache", Port: ports["memcache"]}
	if main.Port == 0 {
		main = serverset.Endpoint{Name: "http", Port: ports["http"]}
	}
	ss, err := serverset.New(serverset.Options{Hosts: cfg.ZooKeeperHosts, PathPrefix: cfg.ZooKeeperPathPrefix,
		AdvertiseHost: host, Main: main, Additional: ports, SessionTimeout: cfg.ZooKeeperSessionTimeout, Log: b.log})
	if err != nil {
		return nil, fmt.Errorf("[zookeeper]: %w", err)
	}
	return ss, nil
}
