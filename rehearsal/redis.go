package rehearsal

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/child"
)

// redisServer is a redis-server child process the conductor starts for a
// fleet of built-in gateways, on a free loopback port, with persistence off.
type redisServer struct {
	cmd  *exec.Cmd
	addr string
	done chan struct{}
	mu   sync.Mutex
	err  error
}

// errNoRedis reports that redis-server is not installed.
var errNoRedis = errors.New("redis-server not found in PATH (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis)")

// startRedis starts redis-server on a free loopback port and waits until it
// answers PING. The process is killed when ctx is cancelled or Stop is
// called, and when the harness dies without calling Stop (internal/child).
func startRedis(ctx context.Context) (*redisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", rehearse.ErrEnvironment, errNoRedis)
	}
	var lastErr error
	// A free port found by binding :0 can be taken again before redis binds
	// it; try a few times rather than fail the run.
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", rehearse.ErrEnvironment, err)
		}
		rs, err := spawnRedis(ctx, bin, port)
		if err == nil {
			return rs, nil
		}
		lastErr = err
	}
	return nil, fmt.Errorf("%w: start redis-server: %w", rehearse.ErrEnvironment, lastErr)
}

func spawnRedis(ctx context.Context, bin string, port int) (*redisServer, error) {
	cmd := exec.Command(bin,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--protected-mode", "yes",
		"--daemonize", "no", "--loglevel", "warning")
	// Redis's own log is kept only to explain a failed start.
	var logBuf lockedBuffer
	cmd.Stdout = &logBuf
	cmd.Stderr = &logBuf
	setProcessGroup(cmd)
	// Killed with the harness however it dies (kill -9 included): in its
	// own process group no terminal signal reaches it, and an orphaned
	// redis-server keeps its port and memory until the next run.
	release, err := child.Start(cmd)
	if err != nil {
		return nil, err
	}
	rs := &redisServer{cmd: cmd, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		release() // exited: nothing left to guard, nor a PID to reuse
		rs.mu.Lock()
		rs.err = err
		rs.mu.Unlock()
		close(rs.done)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := redisPing(rs.addr); err == nil {
			return rs, nil
		}
		select {
		case <-rs.done:
			return nil, fmt.Errorf("redis-server exited: %v: %s", rs.err, logBuf.tail(512))
		case <-ctx.Done():
			rs.Stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			rs.Stop()
			return nil, fmt.Errorf("redis-server on %s did not answer PING within 5s", rs.addr)
		}
	}
}

// Addr returns host:port.
func (r *redisServer) Addr() string { return r.addr }

// URL returns the redis:// URL of the server.
func (r *redisServer) URL() string { return "redis://" + r.addr + "/0" }

// Stop kills the server and waits for it to exit.
func (r *redisServer) Stop() {
	if r == nil || r.cmd.Process == nil {
		return
	}
	select {
	case <-r.done:
		return
	default:
	}
	_ = r.cmd.Process.Signal(os.Interrupt)
	select {
	case <-r.done:
	case <-time.After(3 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
}

func redisPing(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("unexpected reply %q", line)
	}
	return nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// lockedBuffer keeps the last bytes a child process wrote.
type lockedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > 64<<10 {
		b.buf = b.buf[len(b.buf)-32<<10:]
	}
	return len(p), nil
}

func (b *lockedBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.buf) > n {
		return string(b.buf[len(b.buf)-n:])
	}
	return strings.TrimSpace(string(b.buf))
}
