package faultproxy

import "math/rand/v2"

// fault is what the proxy does to an eligible chunk.
type fault int

const (
	noFault    fault = iota
	resetFault       // reset the connection instead of forwarding the chunk
	dropFault        // forward the chunk, then lose the answer
)

// schedule decides which eligible chunks meet a fault, and which fault.
type schedule struct {
	faults spread // over eligible chunks
	resets spread // over faults: the others drop a response
}

// newSchedule spreads f's rates; together they are at most 1, a reset taking precedence.
func newSchedule(f Faults) schedule {
	all := min(f.ResetRate+f.DropResponseRate, 1)
	resets := 0.0
	if all > 0 {
		resets = min(f.ResetRate, 1) / all
	}
	return schedule{faults: newSpread(all), resets: newSpread(resets)}
}

// next is the fault the next eligible chunk meets.
func (s *schedule) next() fault {
	switch {
	case !s.faults.pick():
		return noFault
	case s.resets.pick():
		return resetFault
	default:
		return dropFault
	}
}

// spread picks a share (0 to 1) of a sequence of events, spread out: the k-th pick falls on a random
// event among events k/share to (k+1)/share, so the first n events hold ⌊n·share⌋ to ⌈n·share⌉ picks.
type spread struct {
	share         float64
	events, picks int64
	next          int64 // the event the next pick falls on, or the first after it when the pick before took it
}

func newSpread(share float64) spread {
	s := spread{share: share}
	s.aim()
	return s
}

// aim places the next pick on a random event of its stretch.
func (s *spread) aim() {
	if s.share > 0 {
		s.next = int64((float64(s.picks) + rand.Float64()) / s.share)
	}
}

// pick reports whether the next event is picked.
func (s *spread) pick() bool {
	event := s.events
	s.events++
	if s.share <= 0 || event < s.next {
		return false
	}
	s.picks++
	s.aim()
	return true
}
