// The spin-wait hint of the pollers in par.go.

#include "textflag.h"

// func pause()
// PAUSE tells the CPU that this is a spin-wait loop: it frees the core's
// issue slots for a sibling hyperthread doing real work, saves power, and
// lets a hypervisor that watches for pause loops hand the physical CPU to
// another virtual one.
TEXT ·pause(SB), NOSPLIT, $0-0
	PAUSE
	RET
