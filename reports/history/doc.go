// Package history indexes the run directories of an archive: one row per
// run and, per drill, the trend of each figure of the figure table over
// the runs (index.md, index.html).
package history
