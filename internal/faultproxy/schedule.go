package faultproxy

import "math/rand/v2"

// fault is what befalls an eligible chunk.
type fault int

const (
	noFault fault = iota
	resetFault
	dropFault
)

// schedule picks which eligible chunks meet which fault.
type schedule struct {
	faults spread // over eligible chunks
	resets spread // over faults; the others drop
}

// newSchedule spreads f's rates; resets come first.
func newSchedule(f Faults) schedule {
	all := min(f.ResetRate+f.DropResponseRate, 1)
	resets := 0.0
	if all > 0 {
		resets = min(f.ResetRate, 1) / all
	}
	return schedule{faults: newSpread(all), resets: newSpread(resets)}
}

// next is the next eligible chunk's fault.
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

// spread picks a share (0 to 1) of events: the k-th pick falls on a random event among k/share to
// (k+1)/share, so n events hold ⌊n·share⌋ to ⌈n·share⌉ picks.
type spread struct {
	share         float64
	events, picks int64
	next          int64 // the event the next pick falls on (or after, if taken)
}

func newSpread(share float64) spread {
	s := spread{share: share}
	s.aim()
	return s
}

// aim places the next pick in its stretch.
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
