package par

// pause executes one PAUSE instruction (pause_amd64.s).
//
//go:noescape
func pause()
