// Package compare sets two groups of runs of one drill side by side (macOS
// and Linux, last week and this week): figure by figure from the figure
// table, with intervals from internal/stats, the platform and config
// differences, and the expectations' outcomes; and renders the comparison
// (compare.json, compare.md, compare.html, the aligned timelines).
package compare
