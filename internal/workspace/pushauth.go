package workspace

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// A push's credential never reaches git. Whatever git holds, a process of
// the same user can read while the push runs: its environment and open
// pipes under /proc/PID, and (where ptrace is not restricted) its memory.
// So git pushes over plain HTTP to a proxy on a loopback port that cadre
// runs for that one push, which adds the Authorization header on its way
// to the remote; the header lives only in cadre, whose /proc entries its
// agents cannot read (it is not dumpable). The proxy serves only the
// connections of the git process it was started for and its children, so
// an agent that finds its port cannot push through it either.

// pushProxy forwards one push's requests to the remote with the header.
type pushProxy struct {
	ln   net.Listener
	srv  *http.Server
	base string // the URL git pushes to instead of the remote's
	git  int    // the pid of the git push, set before started is closed
	// started is closed once git runs (or will not): a connection is
	// judged only then.
	started chan struct{}
	once    sync.Once
}

// startPushProxy serves remote (an http or https URL) on a loopback port,
// adding header ("Name: value") to every request.
func startPushProxy(remote, header string) (*pushProxy, error) {
	up, err := url.Parse(remote)
	if err != nil {
		return nil, fmt.Errorf("push: remote url: %w", err)
	}
	name, value, ok := strings.Cut(header, ":")
	if !ok {
		return nil, errors.New("push: the auth header is not Name: value")
	}
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("push: listen: %w", err)
	}
	p := &pushProxy{ln: ln, base: "http://" + ln.Addr().String() + "/r/", started: make(chan struct{})}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			rest := strings.TrimPrefix(pr.In.URL.Path, "/r/")
			out := *up
			out.Path = strings.TrimSuffix(up.Path, "/") + "/" + rest
			out.RawPath = ""
			out.RawQuery = pr.In.URL.RawQuery
			pr.Out.URL = &out
			pr.Out.Host = up.Host
			pr.Out.Header.Set(name, value)
		},
		// The remote's answer goes back as it came; an error names no
		// header (the default handler logs to stderr).
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, "cadre push proxy: "+err.Error(), http.StatusBadGateway)
		},
	}
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/r/") {
			http.NotFound(w, r)
			return
		}
		rp.ServeHTTP(w, r)
	})}
	go p.srv.Serve(&peerListener{Listener: ln, ok: p.fromGit})
	return p, nil
}

// gitStarted records the pid of the git push.
func (p *pushProxy) gitStarted(pid int) {
	p.once.Do(func() { p.git = pid; close(p.started) })
}

// Close stops the proxy.
func (p *pushProxy) Close() {
	p.once.Do(func() { close(p.started) })
	p.srv.Close()
}

// fromGit says whether the connection c comes from the git push or one of
// its descendants (git-remote-http).
func (p *pushProxy) fromGit(c net.Conn) bool {
	<-p.started
	root := p.git
	if root == 0 {
		return false
	}
	inode, ok := socketInode(c)
	if !ok {
		return false
	}
	for _, pid := range descendants(root) {
		if holdsSocket(pid, inode) {
			return true
		}
	}
	return false
}

// peerListener drops the connections ok refuses before any byte is read.
type peerListener struct {
	net.Listener
	ok func(net.Conn) bool
}

func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.ok(c) {
			return c, nil
		}
		c.Close()
	}
}

// socketInode is the inode of the client's end of the loopback
// connection c, from /proc/net/tcp: the socket whose local port is c's
// remote one and whose peer is c's local address.
func socketInode(c net.Conn) (string, bool) {
	local, ok1 := c.LocalAddr().(*net.TCPAddr)
	remote, ok2 := c.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return "", false
	}
	want := fmt.Sprintf("%s %s", hexAddr(remote), hexAddr(local))
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 9 && fields[1]+" "+fields[2] == want {
			return fields[9], true
		}
	}
	return "", false
}

// hexAddr writes an IPv4 address and port the way /proc/net/tcp does:
// the address as a little-endian 32-bit word, both in upper-case hex.
func hexAddr(a *net.TCPAddr) string {
	ip := a.IP.To4()
	if ip == nil {
		return ""
	}
	return fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], a.Port)
}

// descendants lists root and every process below it.
func descendants(root int) []int {
	children := map[int][]int{}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		// The command name in parentheses may hold spaces: fields start
		// after its closing one.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil {
			children[ppid] = append(children[ppid], pid)
		}
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// holdsSocket says whether process pid has the socket inode open.
func holdsSocket(pid int, inode string) bool {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	want := "socket:[" + inode + "]"
	for _, fd := range fds {
		if l, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && l == want {
			return true
		}
	}
	return false
}

// pushThroughProxy pushes refspec to the http(s) remote at remoteURL
// through a proxy adding header.
func (r *Repo) pushThroughProxy(ctx context.Context, remoteURL, header, refspec string) error {
	return r.throughProxy(ctx, remoteURL, header, func(base string) []string {
		return []string{"push", "--quiet", "--", base, refspec}
	})
}

// throughProxy runs the git command args(url) makes, which talks to the
// http(s) remote at remoteURL through a proxy adding header (a push, a
// fetch). git is given the proxy's URL as the remote (a remote's pushurl
// would defeat an insteadOf rewrite), and no proxy of the user's between
// itself and the loopback port.
func (r *Repo) throughProxy(ctx context.Context, remoteURL, header string, args func(url string) []string) error {
	p, err := startPushProxy(remoteURL, header)
	if err != nil {
		return err
	}
	defer p.Close()
	full := r.withFilters(ctx, args(p.base))
	if _, err = gitRun(ctx, r.Dir, []string{"NO_PROXY=127.0.0.1", "no_proxy=127.0.0.1"}, p.gitStarted, full...); err != nil {
		// git names the URL it was given: name the remote's.
		return errors.New(strings.ReplaceAll(err.Error(), strings.TrimSuffix(p.base, "/"), remoteURL))
	}
	return nil
}
