package launchd_test

import (
	"fmt"
	"time"

	"github.com/halfopen/rehearse/launchd"
)

func ExampleParseSchedule() {
	sched, err := launchd.ParseSchedule([]string{"Mon 03:00", "thursday 3:30"}, []string{"12:00"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, w := range sched {
		fmt.Printf("%-12s OnCalendar=%s\n", w, w.OnCalendar())
	}
	_, err = launchd.ParseSchedule([]string{"Funday 03:00"}, nil)
	fmt.Println(err)
	// Output:
	// Mon 03:00    OnCalendar=Mon *-*-* 03:00:00
	// Thu 03:30    OnCalendar=Thu *-*-* 03:30:00
	// daily 12:00  OnCalendar=*-*-* 12:00:00
	// invalid schedule "Funday 03:00": unknown day "Funday": want Mon, Tue, Wed, Thu, Fri, Sat or Sun (or the full name)
}

func ExampleJob_Args() {
	j, err := launchd.Job{
		Binary:   "/usr/local/bin/rehearse",
		Scenario: "/Users/ci/rehearsals/weekly.yaml",
		Schedule: []launchd.When{{Weekday: time.Monday, Hour: 3}},
		Keep:     launchd.DefaultKeep,
	}.Resolve("/Users/ci")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(j.Label)
	fmt.Println(j.Args())
	// Output:
	// dev.rehearse.weekly
	// [/usr/local/bin/rehearse run /Users/ci/rehearsals/weekly.yaml --archive /Users/ci/rehearse/runs --keep 12]
}
