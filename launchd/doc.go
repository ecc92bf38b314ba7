// Package launchd schedules weekly rehearsals: it renders a macOS
// LaunchAgent property list (or, for hosts without launchd, a systemd user
// service and timer) that runs `rehearse run` on a calendar schedule,
// installs and controls it through launchctl (or systemctl --user). It only
// schedules: the archive the runs go to (one directory per run, `latest`,
// retention, the history index) belongs to the runs package.
//
// Rendering is pure and works on every OS, so `rehearse launchd print` can
// produce a Mac's plist on a Linux laptop. Only the default command runner
// and the user id lookup for launchctl are darwin-specific (runner_darwin.go);
// elsewhere the launchctl operations fail with ErrUnsupported, which points to
// `rehearse launchd print` and `rehearse systemd`. The install, uninstall,
// status and kickstart logic itself is OS-independent and takes a Runner, so
// tests on Linux record the exact argv it would run and the files it writes.
//
// The date of a run's directory is decided when the run starts, not when the
// agent is installed: the agent runs `rehearse run SCENARIO --archive DIR`,
// and that command calls runs.Archive.NewRun and runs.Archive.Finish.
package launchd
