//go:build linux

package replay

import (
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// preciseSleep waits d on a timerfd(2) read through Go's network poller.
// Go's own timers wake through the poller's epoll_wait, whose timeout has
// millisecond granularity (a timer due in 0.5 ms fires about 1 ms late);
// a timerfd is an hrtimer the kernel expires on time (no timer slack),
// and its readiness wakes epoll_wait at once. The goroutine parks like on
// any read: no thread is held and no processor is blocked, so senders
// and the runtime go on meanwhile. It wakes within the kernel's wake-up
// latency (docs/replay.md, "Timer accuracy"). Where a timerfd cannot be
// had, it falls back to clock_nanosleep on the calling thread.
func preciseSleep(d time.Duration) {
	if d <= 0 {
		return
	}
	t, err := getTimerFD()
	if err == nil {
		its := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
		if err = unix.TimerfdSettime(t.fd, 0, &its, nil); err == nil {
			var buf [8]byte // the expiration count
			_, err = t.f.Read(buf[:])
		}
		if err == nil {
			timerFDs.Put(t)
			return
		}
		t.f.Close()
	}
	req := unix.NsecToTimespec(int64(d))
	var rem unix.Timespec
	// Interrupted by a signal (the Go runtime preempts with SIGURG), the
	// call reports the time left, and sleeps again for that.
	for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, 0, &req, &rem) == unix.EINTR {
		req = rem
	}
}

// timerFD is a non-blocking timerfd registered with Go's poller. fd is
// kept beside the file: (*os.File).Fd would switch it to blocking mode.
type timerFD struct {
	f  *os.File
	fd int
}

// timerFDs reuses timerfds across sleeps (one per concurrent sleeper); one
// the pool drops is closed by the *os.File's cleanup.
var timerFDs sync.Pool

func getTimerFD() (*timerFD, error) {
	if t, ok := timerFDs.Get().(*timerFD); ok {
		return t, nil
	}
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return &timerFD{f: os.NewFile(uintptr(fd), "replay-pacer-timerfd"), fd: fd}, nil
}
