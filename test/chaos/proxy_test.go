package chaos

import (
	"io"
	"net"
	"sync"
	"testing"
)

// proxy forwards TCP connections from a port of its own to kube-apiserver,
// so that a test can cut one client off (every connection closed, new ones
// closed at once) while the rest of the plane goes on. TLS passes through
// untouched: kube-apiserver's certificate names 127.0.0.1, whatever the port.
type proxy struct {
	l      net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
}

// startProxy listens on a free port of 127.0.0.1 and forwards to target
// (host:port) until t ends.
func startProxy(t testing.TB, target string) *proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	p := &proxy{l: l, target: target, conns: map[net.Conn]struct{}{}}
	var wg sync.WaitGroup
	wg.Go(func() { p.serve(&wg) })
	t.Cleanup(func() {
		l.Close()
		p.Cut()
		wg.Wait()
	})
	return p
}

// URL returns the proxy's https:// address.
func (p *proxy) URL() string { return "https://" + p.l.Addr().String() }

// Cut closes every connection through the proxy and closes new ones as they
// come, until Restore.
func (p *proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// Restore forwards new connections again.
func (p *proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

func (p *proxy) serve(wg *sync.WaitGroup) {
	for {
		in, err := p.l.Accept()
		if err != nil {
			return // closed
		}
		wg.Go(func() { p.forward(in) })
	}
}

// forward copies between in and a new connection to the target, both ways,
// until either side closes or Cut closes both.
func (p *proxy) forward(in net.Conn) {
	out, err := net.Dial("tcp", p.target)
	if err != nil {
		in.Close()
		return
	}
	p.mu.Lock()
	if p.cut {
		p.mu.Unlock()
		in.Close()
		out.Close()
		return
	}
	p.conns[in], p.conns[out] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(out, in); done <- struct{}{} }()
	go func() { _, _ = io.Copy(in, out); done <- struct{}{} }()
	<-done
	in.Close()
	out.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, in)
	delete(p.conns, out)
	p.mu.Unlock()
}
