package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/halfopen/rehearse"
)

// coordinator serialises half-open probes across a fleet of gateways.
type coordinator interface {
	// acquire takes the probe lease of key for at most hold; ok is false
	// when another gateway holds it. An error means the coordinator is
	// unreachable: the caller fails safe.
	acquire(ctx context.Context, key string, hold time.Duration) (token string, ok bool, err error)
	// release shortens the lease to keep (the rest of the probe spacing),
	// or deletes it when keep <= 0, if token still owns it.
	release(ctx context.Context, key, token string, keep time.Duration) error
	ping(ctx context.Context) error
	close() error
}

// redisCoord is the Redis lease: SET key token NX PX hold. The lease is
// held for the whole probe (so at most one probe is in flight across the
// fleet) and then shortened to the rest of the probe spacing (so that the
// next probe anywhere starts at least probe_interval after this one).
type redisCoord struct {
	rdb      *redis.Client
	prefix   string
	releaser *redis.Script
}

// releaseScript: if the lease is still ours, keep it for ARGV[2] ms more,
// or delete it.
const releaseScript = `
if redis.call("GET", KEYS[1]) == ARGV[1] then
  if tonumber(ARGV[2]) > 0 then
    return redis.call("PEXPIRE", KEYS[1], ARGV[2])
  end
  return redis.call("DEL", KEYS[1])
end
return 0`

// redisLog routes go-redis's own messages (dial failures, repeated while
// Redis is down) to slog at debug level: the gateway reports the
// coordinator's state itself, once per change. go-redis only has a
// process-wide logger, so it is set once, on the first coordinator.
type redisLog struct{}

func (redisLog) Printf(ctx context.Context, format string, v ...any) {
	slog.Default().DebugContext(ctx, fmt.Sprintf(format, v...), "component", "go-redis")
}

var redisLogOnce sync.Once

func newRedisCoord(rawURL string, timeout time.Duration) (*redisCoord, error) {
	redisLogOnce.Do(func() { redis.SetLogger(redisLog{}) })
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: coord %q: %w", rehearse.ErrInvalid, rawURL, err)
	}
	// Fail fast: a partitioned Redis must delay a probe by at most one
	// timeout, and never stall client traffic.
	opt.DialTimeout = timeout
	opt.ReadTimeout = timeout
	opt.WriteTimeout = timeout
	opt.PoolTimeout = timeout
	opt.MaxRetries = -1
	opt.DialerRetries = 1
	opt.Protocol = 2
	opt.DisableIdentity = true
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	return &redisCoord{
		rdb:      redis.NewClient(opt),
		prefix:   "rehearse:gateway:probe:",
		releaser: redis.NewScript(releaseScript),
	}, nil
}

func (c *redisCoord) acquire(ctx context.Context, key string, hold time.Duration) (string, bool, error) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	ok, err := c.rdb.SetNX(ctx, c.prefix+key, token, hold).Result()
	if err != nil {
		return "", false, err
	}
	return token, ok, nil
}

func (c *redisCoord) release(ctx context.Context, key, token string, keep time.Duration) error {
	err := c.releaser.Run(ctx, c.rdb, []string{c.prefix + key}, token, keep.Milliseconds()).Err()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}

func (c *redisCoord) ping(ctx context.Context) error { return c.rdb.Ping(ctx).Err() }

func (c *redisCoord) close() error { return c.rdb.Close() }
