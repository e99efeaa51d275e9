package faultproxy

import "encoding/binary"

// HTTP/2 framing, as far as the proxy needs it (RFC 9113 §4.1, §6): where frames begin and end, which
// stream each belongs to, and which frame ends a stream. Header blocks are never decoded.
const (
	frameHeaderLen = 9
	frameData      = 0x0
	frameHeaders   = 0x1
	frameRSTStream = 0x3
	flagEndStream  = 0x1
	// clientPreface opens every client side of an HTTP/2 connection, before its first frame.
	clientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
)

// frame is one whole HTTP/2 frame seen by a frameScanner.
type frame struct {
	typ, flags byte
	stream     uint32
	// payload holds a DATA frame's payload when the scanner keeps them, nil otherwise.
	payload []byte
}

// endsStream reports whether the frame is its sender's last on its stream: a response is complete (or
// refused) once the server sends one.
func (f frame) endsStream() bool {
	switch f.typ {
	case frameRSTStream:
		return true
	case frameData, frameHeaders:
		return f.flags&flagEndStream != 0
	}
	return false
}

// frameScanner follows the frames of one direction of a connection through the arbitrary chunks TCP
// delivers them in.
type frameScanner struct {
	skip     int  // preface bytes still to pass over
	keepData bool // collect DATA payloads, to match request bodies
	head     [frameHeaderLen]byte
	headLen  int
	cur      frame
	left     int // payload bytes of cur not seen yet
}

// newClientScanner scans what a client sends: its preface, then frames whose DATA payloads are kept.
func newClientScanner() *frameScanner {
	return &frameScanner{skip: len(clientPreface), keepData: true}
}

// newServerScanner scans what a server sends: frames only.
func newServerScanner() *frameScanner { return &frameScanner{} }

// feed scans the next chunk and calls emit for every frame that ends in it.
func (s *frameScanner) feed(chunk []byte, emit func(frame)) {
	for len(chunk) > 0 {
		if s.skip > 0 {
			n := min(s.skip, len(chunk))
			s.skip -= n
			chunk = chunk[n:]
			continue
		}
		if s.headLen < frameHeaderLen {
			n := copy(s.head[s.headLen:], chunk)
			s.headLen += n
			chunk = chunk[n:]
			if s.headLen < frameHeaderLen {
				return
			}
			s.cur = frame{typ: s.head[3], flags: s.head[4], stream: binary.BigEndian.Uint32(s.head[5:]) &^ (1 << 31)}
			s.left = int(s.head[0])<<16 | int(s.head[1])<<8 | int(s.head[2])
		}
		n := min(s.left, len(chunk))
		if s.keepData && s.cur.typ == frameData {
			s.cur.payload = append(s.cur.payload, chunk[:n]...)
		}
		s.left -= n
		chunk = chunk[n:]
		if s.left == 0 {
			emit(s.cur)
			s.headLen = 0
		}
	}
}
