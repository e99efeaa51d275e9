package faultproxy

import "encoding/binary"

// HTTP/2 framing (RFC 9113 §4.1, §6); header blocks are never decoded.
const (
	frameHeaderLen = 9
	frameData      = 0x0
	frameHeaders   = 0x1
	frameRSTStream = 0x3
	flagEndStream  = 0x1
	clientPreface  = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
)

// frame is one HTTP/2 frame; payload is a kept DATA payload.
type frame struct {
	typ, flags byte
	stream     uint32
	payload    []byte
}

// endsStream reports whether the frame ends its stream for its sender.
func (f frame) endsStream() bool {
	switch f.typ {
	case frameRSTStream:
		return true
	case frameData, frameHeaders:
		return f.flags&flagEndStream != 0
	}
	return false
}

// frameScanner follows one direction's frames across TCP chunks.
type frameScanner struct {
	skip     int // preface bytes left
	keepData bool
	head     [frameHeaderLen]byte
	headLen  int
	cur      frame
	left     int // payload bytes of cur unseen
}

// newClientScanner skips the client preface and keeps DATA payloads.
func newClientScanner() *frameScanner {
	return &frameScanner{skip: len(clientPreface), keepData: true}
}

// newServerScanner scans server frames.
func newServerScanner() *frameScanner { return &frameScanner{} }

// feed calls emit for every frame that ends in chunk.
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
