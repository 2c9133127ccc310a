package main

// cd perf/ws_load && go test: the fanout mode's checks against frames made
// here as a server would (compress/flate with a sync flush, the tail cut).

import (
	"bytes"
	"compress/flate"
	"strings"
	"sync/atomic"
	"testing"
)

func TestDeflateAgreed(t *testing.T) {
	head := func(ext string) string {
		h := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket"
		if ext != "" {
			h += "\r\nSec-WebSocket-Extensions: " + ext
		}
		return h
	}
	for _, c := range []struct {
		ext           string
		ok, noCtx, er bool
		bits          int
	}{
		{"", false, false, false, 15},
		{"permessage-deflate; server_no_context_takeover; client_no_context_takeover", true, true, false, 15},
		{"permessage-deflate; client_no_context_takeover; server_max_window_bits=12", true, false, false, 12},
		{"permessage-deflate; server_max_window_bits=99", false, false, true, 0},
		{"x-webkit-deflate-frame", false, false, true, 0},
		{"permessage-deflate; foo", false, false, true, 0},
	} {
		_, ok, noCtx, bits, err := deflateAgreed(head(c.ext))
		if ok != c.ok || noCtx != c.noCtx || (err != nil) != c.er || (ok && bits != c.bits) {
			t.Errorf("%q: ok %v noCtx %v bits %d err %v", c.ext, ok, noCtx, bits, err)
		}
	}
}

// serverFrame: an unmasked text frame, RSV1 when compressed.
func serverFrame(payload []byte, rsv1 bool) []byte {
	b0 := byte(0x81)
	if rsv1 {
		b0 |= 0x40
	}
	f := []byte{b0}
	switch n := len(payload); {
	case n < 126:
		f = append(f, byte(n))
	case n < 65536:
		f = append(f, 126, byte(n>>8), byte(n))
	default:
		t := make([]byte, 9)
		t[0] = 127
		for i := 0; i < 8; i++ {
			t[8-i] = byte(n >> (8 * i))
		}
		f = append(f, t...)
	}
	return append(f, payload...)
}

func setupFanout(size, window int) {
	*flagSize, *flagWindow = size, window
	ring := 2 * (window + 16)
	fanCounts, fanSentNs = make([]atomic.Int64, ring), make([]atomic.Int64, ring)
	fanLive.Store(1 << 30) // no completion signalled
	fanFinal.Store(-1)
}

func message(seq uint64) []byte {
	m := make([]byte, *flagSize)
	sent := int64(1_700_000_000_000_000_000) + int64(seq)
	fanSentNs[seq%uint64(len(fanSentNs))].Store(sent)
	fanHead(m, seq, sent)
	copy(m[fanHeadLen:], fanFiller(seq, *flagSize-fanHeadLen))
	return m
}

// subscriber: n messages through one subscriber's parser; stream makes the
// bytes the server sends.
func subscriber(t *testing.T, n int, ctx bool, stream func(seq uint64, m []byte) []byte) *sconn {
	t.Helper()
	l := &floop{conns: map[int]*sconn{}, cache: map[string][]byte{}, hist: new(histogram)}
	c := &sconn{p: parser{closeCode: -1, collect: true, deflate: true, maxMsg: 1 << 20}}
	if ctx {
		c.ctx, c.histMax = true, 1<<15 // compress/flate's window (a server says its own)
	}
	c.p.onMsg = func(op byte, rsv1 bool, payload []byte, wire int) { l.onMsg(c, op, rsv1, payload, wire) }
	var all []byte
	for s := uint64(0); s < uint64(n); s++ {
		all = append(all, stream(s, message(s))...)
	}
	for len(all) > 0 && c.p.protoError == "" { // in odd pieces, as reads would give them
		k := min(len(all), 777)
		c.p.feed(all[:k])
		all = all[k:]
	}
	return c
}

func deflater(t *testing.T, ctx bool) func(uint64, []byte) []byte {
	var buf bytes.Buffer
	w, err := flate.NewWriter(&buf, 6)
	if err != nil {
		t.Fatal(err)
	}
	return func(_ uint64, m []byte) []byte {
		buf.Reset()
		if !ctx {
			w.Reset(&buf)
		}
		_, _ = w.Write(m)
		_ = w.Flush()
		z := bytes.TrimSuffix(buf.Bytes(), []byte{0, 0, 0xff, 0xff})
		return serverFrame(append([]byte(nil), z...), true)
	}
}

func TestFanoutMessages(t *testing.T) {
	setupFanout(1024, 8)
	for _, tc := range []struct {
		name string
		ctx  bool
		f    func(uint64, []byte) []byte
	}{
		{"plain", false, func(_ uint64, m []byte) []byte { return serverFrame(m, false) }},
		{"deflate, no context", false, deflater(t, false)},
		{"deflate, context kept", true, deflater(t, true)},
	} {
		c := subscriber(t, 40, tc.ctx, tc.f)
		if c.p.protoError != "" || c.next != 40 {
			t.Errorf("%s: %d messages, error %q (%s)", tc.name, c.next, c.p.protoError, c.bad)
		}
	}
	// Compressed to about a third: the filler is not trivially compressible.
	z := deflater(t, false)(7, message(7))
	if n := len(z); n < 200 || n > 600 {
		t.Errorf("1 KiB compressed to %d bytes", n)
	}
}

func TestFanoutErrors(t *testing.T) {
	setupFanout(256, 8)
	plain := func(_ uint64, m []byte) []byte { return serverFrame(m, false) }
	for _, tc := range []struct {
		kind, err string
		f         func(uint64, []byte) []byte
	}{
		{"lost", "never came", func(s uint64, m []byte) []byte {
			if s == 3 {
				return nil
			}
			return plain(s, m)
		}},
		{"out of order", "after", func(s uint64, m []byte) []byte {
			if s == 5 {
				return append(plain(s, m), plain(4, message(4))...)
			}
			return plain(s, m)
		}},
		{"corrupt", "differs", func(s uint64, m []byte) []byte {
			if s == 2 {
				m[200] ^= 1
			}
			return plain(s, m)
		}},
		{"corrupt", "bytes", func(s uint64, m []byte) []byte {
			if s == 2 {
				m = m[:100]
			}
			return plain(s, m)
		}},
		{"corrupt", "message 1", func(s uint64, m []byte) []byte { // inflate fails, or a wrong length
			f := deflater(t, false)(s, m)
			if s == 1 {
				f[len(f)/2] ^= 0xff
			}
			return f
		}},
		{"corrupt", "type", func(s uint64, m []byte) []byte {
			f := plain(s, m)
			if s == 1 {
				f[0] = 0x82
			}
			return f
		}},
	} {
		c := subscriber(t, 10, false, tc.f)
		if c.bad != tc.kind || !strings.Contains(c.p.protoError, tc.err) {
			t.Errorf("want %s (%q), got %q: %q", tc.kind, tc.err, c.bad, c.p.protoError)
		}
	}
	// RSV1 where no deflate was agreed is the parser's own error.
	p := parser{closeCode: -1, collect: true, maxMsg: 1 << 20, onMsg: func(byte, bool, []byte, int) {}}
	p.feed(serverFrame([]byte("x"), true))
	if !strings.Contains(p.protoError, "reserved bits") {
		t.Errorf("RSV1 without deflate: %q", p.protoError)
	}
}
