//go:build !unix

package rehearsal

func resourceUsage() string { return "harness resource usage unavailable on this OS" }
