//go:build unix

package rundir

import (
	"os"

	"golang.org/x/sys/unix"
)

// tryLock takes an exclusive flock(2) on f without waiting; false when
// another open file (in this process or another) holds it. On NFS, Linux
// maps it to a POSIX byte-range lock that the server keeps.
func tryLock(f *os.File) (bool, error) {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch err {
		case nil:
			return true, nil
		case unix.EWOULDBLOCK:
			return false, nil
		case unix.EINTR:
			continue
		default:
			return false, err
		}
	}
}
