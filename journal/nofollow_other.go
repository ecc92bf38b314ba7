//go:build !unix

package journal

// noFollow is 0 where open has no O_NOFOLLOW: there only Create's Lstat
// guards against a link, with a race the Unix flag closes.
const noFollow = 0
