package sandbox

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// proxyPort is where the bridge listens inside the sandbox's own network
// namespace, where no other program has a port yet.
const proxyPort = 3128

// dialTimeout bounds the proxy's connection to an allowed host.
const dialTimeout = 30 * time.Second

// Proxy is an HTTP proxy (CONNECT and plain forwarding) on a Unix socket
// that reaches only the hosts it allows. The socket lives in a directory
// of its own, which the sandbox exposes to the agent.
type Proxy struct {
	Socket string
	allow  []string
	warn   func(host string)
	ln     net.Listener
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

// StartProxy listens on a fresh Unix socket and serves until Close.
func StartProxy(allow []string, warn func(host string)) (*Proxy, error) {
	dir, err := os.MkdirTemp("", "cadre-net-")
	if err != nil {
		return nil, fmt.Errorf("sandbox proxy: %w", err)
	}
	sock := filepath.Join(dir, "proxy.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("sandbox proxy: %w", err)
	}
	p := &Proxy{Socket: sock, allow: allow, warn: warn, ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.serve)
	return p, nil
}

// Close stops the proxy, ends its connections and removes its socket.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
	os.RemoveAll(filepath.Dir(p.Socket))
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			continue
		}
		p.wg.Go(func() { defer p.untrack(c); p.handle(c) })
	}
}

// handle serves one client connection: a CONNECT tunnel to an allowed
// host, or one plain HTTP request forwarded to it.
func (p *Proxy) handle(c net.Conn) {
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	host := req.Host
	if req.Method != http.MethodConnect {
		if req.URL.Scheme != "http" || req.URL.Host == "" {
			fmt.Fprint(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			return
		}
		host = req.URL.Host
	}
	hostPort := withPort(host, req.URL.Scheme)
	if !allowed(p.allow, hostPort) {
		if p.warn != nil {
			p.warn(hostPort)
		}
		fmt.Fprintf(c, "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
			len(refusedBody(hostPort)), refusedBody(hostPort))
		return
	}
	up, err := net.DialTimeout("tcp", hostPort, dialTimeout)
	if err != nil {
		msg := "cadre sandbox: " + err.Error() + "\n"
		fmt.Fprintf(c, "HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(msg), msg)
		return
	}
	if !p.track(up) {
		return
	}
	defer p.untrack(up)
	if req.Method == http.MethodConnect {
		fmt.Fprint(c, "HTTP/1.1 200 Connection established\r\n\r\n")
		splice(c, br, up)
		return
	}
	// One request per connection: the client's next request may be for
	// another host, which must be checked, so neither side keeps this one
	// open. Write sends the origin form ("GET /path") a server expects.
	req.Close = true
	req.Header.Del("Proxy-Connection")
	req.Header.Del("Proxy-Authorization")
	if err := req.Write(up); err != nil {
		return
	}
	io.Copy(c, up) // as it arrives, so a streamed answer streams
}

func refusedBody(host string) string {
	return "cadre sandbox: " + host + " is not allowed (network: model-only; add it to sandbox.allow_hosts)\n"
}

// splice copies both ways until either side is done.
func splice(c net.Conn, br *bufio.Reader, up net.Conn) {
	done := make(chan struct{}, 2)
	go func() { io.Copy(up, br); closeWrite(up); done <- struct{}{} }()
	go func() { io.Copy(c, up); closeWrite(c); done <- struct{}{} }()
	<-done
	<-done
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
}

// withPort adds the scheme's default port to host when it has none.
func withPort(host, scheme string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	port := "443"
	if scheme == "http" {
		port = "80"
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), port)
}

// allowed says whether hostPort matches an entry of allow: host:port
// exactly, or a host alone for any of its ports. Names compare without
// case; no wildcard, so an entry allows what it names and nothing else.
func allowed(allow []string, hostPort string) bool {
	h, _, err := net.SplitHostPort(hostPort)
	if err != nil {
		return false
	}
	for _, a := range allow {
		a = strings.ToLower(strings.TrimSpace(a))
		if a == strings.ToLower(hostPort) || a == strings.ToLower(h) {
			return true
		}
	}
	return false
}

// endpoint is the host:port of a model URL, or "" when it is not one.
func endpoint(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	return withPort(u.Host, u.Scheme)
}

// modelHosts are the endpoints a step's agent may reach: the runner's,
// those named by *_BASE_URL variables of its environment, and allow_hosts.
func modelHosts(st Step, allowHosts []string) []string {
	var hosts []string
	for _, h := range st.Hosts {
		if strings.Contains(h, "://") {
			h = endpoint(h)
		}
		if h != "" {
			hosts = append(hosts, h)
		}
	}
	for _, e := range st.Env {
		k, v, _ := strings.Cut(e, "=")
		if strings.HasSuffix(k, "_BASE_URL") {
			if h := endpoint(v); h != "" {
				hosts = append(hosts, h)
			}
		}
	}
	hosts = append(hosts, allowHosts...)
	slices.Sort(hosts)
	return slices.Compact(hosts)
}

// loopbackPorts are the endpoints among hosts that are on this machine's
// loopback: the bridge listens on the same address inside the sandbox, so
// an agent that bypasses a proxy for local addresses still reaches them.
func loopbackPorts(hosts []string) []string {
	var out []string
	for _, h := range hosts {
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			continue
		}
		if host == "localhost" {
			host = "127.0.0.1"
		}
		ip := net.ParseIP(host)
		if ip == nil || !ip.IsLoopback() || ip.To4() == nil {
			continue
		}
		if n, err := strconv.Atoi(port); err != nil || n == proxyPort {
			continue
		}
		out = append(out, net.JoinHostPort(host, port))
	}
	return out
}

// startProxy runs the step's proxy to hosts and sets up the bridge that
// carries the agent's connections to it.
func (p *Policy) startProxy(out *Prepared, hosts []string) error {
	px, err := StartProxy(hosts, p.Warn)
	if err != nil {
		return err
	}
	out.closers = append(out.closers, px.Close)
	sb := out.Sandbox
	sb.Expose = append(sb.Expose, filepath.Dir(px.Socket), p.Helper)
	listen := net.JoinHostPort("127.0.0.1", strconv.Itoa(proxyPort))
	sb.Wrap = []string{p.Helper, BridgeCommand, "--socket", px.Socket, "--proxy", listen}
	for _, lp := range loopbackPorts(hosts) {
		sb.Wrap = append(sb.Wrap, "--forward", lp)
	}
	u := "http://" + listen
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"} {
		out.Env[k] = u
	}
	// Local endpoints are forwarded by the bridge directly.
	out.Env["NO_PROXY"], out.Env["no_proxy"] = "", ""
	return nil
}
