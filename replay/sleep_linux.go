//go:build linux

package replay

import (
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// alarmLead is how much earlier than the timerfd the Go timer of a
// precise sleep is due (alarmSleep): enough for the Go runtime's monitor
// thread to wake from its sleep (a futex timeout, up to the kernel's 50 µs
// default timer slack late, plus a virtual CPU's wake-up latency) before
// the sender's first system call. It costs no precision: the Go timer only
// runs when the poller wakes, at the timerfd's expiry, unless the poller's
// millisecond timeout happens to end inside the lead; that sleep then ends
// on the timerfd itself.
const alarmLead = 150 * time.Microsecond

// preciseSleep waits d, within the kernel's wake-up latency and never less
// (docs/replay.md, "Timer accuracy"): alarmSleep with alarmLead.
func preciseSleep(d time.Duration) { alarmSleep(d, alarmLead) }

// alarmSleep waits d. It arms a timerfd(2), an hrtimer the kernel expires
// on time (no timer slack) registered with Go's network poller, and waits
// on a Go timer due lead before it. Go's poller sleeps in epoll_wait with
// a millisecond timeout (a Go timer alone due in 0.5 ms fires about 1 ms
// late), but the timerfd's expiry wakes it at once, and the Go timer, due
// by then, fires: the sleep ends at the expiry. When the Go timer fires
// before the expiry (the poller's timeout ended inside the lead), the
// sleep ends by reading the timerfd. Either way the goroutine is parked,
// holding no thread and no processor.
//
// Why a Go timer at all, when a read of the timerfd alone wakes on time:
// while every processor is idle the Go runtime's monitor thread (sysmon)
// sleeps until the next Go timer, and the first system call after a
// wake-up it did not foresee (the timerfd's, which it does not know of)
// wakes it with its polling reset to every 20 µs for as long as the
// process stays busy. In a 503 drill at 10/s that was 24 of the 44
// voluntary context switches per request. With a Go timer due first, the
// monitor wakes on its own timeout, its polling stays relaxed (up to
// 10 ms) and the request's system calls find it awake.
//
// Where a timerfd cannot be had, it falls back to clock_nanosleep on the
// calling thread.
func alarmSleep(d, lead time.Duration) {
	if d <= 0 {
		return
	}
	end := time.Now().Add(d)
	a, err := getAlarm()
	if err == nil {
		its := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
		if err = unix.TimerfdSettime(a.fd, 0, &its, nil); err == nil {
			if g := d - lead; g > 0 {
				a.timer.Reset(g)
				<-a.timer.C
			}
			if time.Now().Before(end) {
				// Re-arming resets the expiration count, so a timerfd
				// left unread after an on-time wake-up is reusable.
				var buf [8]byte
				_, err = a.f.Read(buf[:])
			}
		}
		if err == nil {
			alarms.Put(a)
			return
		}
		a.f.Close()
		d = time.Until(end)
	}
	nanosleep(d)
}

// nanosleep sleeps d on the calling thread.
func nanosleep(d time.Duration) {
	if d <= 0 {
		return
	}
	req := unix.NsecToTimespec(int64(d))
	var rem unix.Timespec
	// Interrupted by a signal (the Go runtime preempts with SIGURG), the
	// call reports the time left, and sleeps again for that.
	for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, 0, &req, &rem) == unix.EINTR {
		req = rem
	}
}

// alarm is a non-blocking timerfd registered with Go's poller and the Go
// timer that waits with it. fd is kept beside the file: (*os.File).Fd
// would switch it to blocking mode.
type alarm struct {
	f     *os.File
	fd    int
	timer *time.Timer
}

// alarms reuses alarms across sleeps (one per concurrent sleeper); one the
// pool drops has its timerfd closed by the *os.File's cleanup.
var alarms sync.Pool

func getAlarm() (*alarm, error) {
	if a, ok := alarms.Get().(*alarm); ok {
		return a, nil
	}
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &alarm{f: os.NewFile(uintptr(fd), "replay-pacer-timerfd"), fd: fd, timer: t}, nil
}
