package main

import (
	"os"
	"testing"
	"time"
)

func TestMeasurePerRequestAndSysmon(t *testing.T) {
	t0 := time.Unix(0, 0)
	a := map[int]threadStat{100: {run: time.Second, vol: 10}, 101: {vol: 5}, 105: {vol: 1}}
	b := map[int]threadStat{
		100: {run: time.Second + 100*time.Millisecond, vol: 30, invol: 2},
		101: {run: 50 * time.Millisecond, vol: 105}, // the second thread: sysmon
		105: {vol: 21},
		107: {run: 50 * time.Millisecond, vol: 40, invol: 8}, // started within the window
	}
	w := measure(a, b, t0, t0.Add(10*time.Second)) // 100 requests at 10/s
	if w.cpu != 2 || w.sysmonCPU != 0.5 {
		t.Errorf("cpu = %v %%, sysmon's %v %%; want 2 (200 ms over 10 s) and 0.5 (50 ms)", w.cpu, w.sysmonCPU)
	}
	if w.vol != 1.8 || w.sysmon != 1 || w.invol != 0.1 || w.threads != 4 {
		t.Errorf("got %+v, want 1.8 switches per request, 1 by sysmon (TID 101), 0.1 involuntary, 4 threads", w)
	}
}

func TestProcThreadsReadsThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/task"); err != nil {
		t.Skip("no /proc: Linux only")
	}
	th := procThreads(os.Getpid())
	if len(th) < 2 {
		t.Fatalf("%d threads, want at least the main thread and sysmon", len(th))
	}
	if st, ok := th[os.Getpid()]; !ok || st.run <= 0 || st.vol+st.invol <= 0 {
		t.Errorf("the main thread: %+v, %v; want its run time and switches", st, ok)
	}
}
