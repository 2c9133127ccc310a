// fanout mode: one publisher, -conns subscribers of one topic (see main.go's
// comment for the mode's summary and perf/compare_ws_fanout.py for its use).

package main

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

var (
	flagPubPath    = flag.String("pub-path", "/test/ws/topic?name=bench&subscribe=0", "fanout: the publisher's request path")
	flagDeflate    = flag.Bool("deflate", false, "fanout: subscribers offer permessage-deflate; client_no_context_takeover; server_no_context_takeover")
	flagDeflateCtx = flag.Bool("deflate-context", false, "fanout, with -deflate: no server_no_context_takeover in the offer (a server may keep a context per socket, as ours' --ws-deflate=dedicated does); each subscriber inflates with its own history")
	flagLoops      = flag.Int("loops", 1, "fanout: epoll loops (OS threads) the subscribers are spread over")
)

const fanTopicPath = "/test/ws/topic?name=bench"

// ---------------------------------------------------------------- messages

// A message: `{"seq":<16 digits>,"sent_ns":<19 digits>,` (its sequence
// number and the publisher's time.Now().UnixNano() just before the write),
// then JSON-ish records whose numbers depend on the sequence number (it
// compresses as such text does: about 2.5:1 at 1 KiB), cut to -size; ASCII,
// sent as text.
const (
	fanHeadLen = 54
	fanSeqAt   = 7
	fanSentAt  = 34
)

func fanHead(b []byte, seq uint64, sent int64) {
	copy(b, `{"seq":`)
	putDigits(b[fanSeqAt:fanSeqAt+16], seq)
	copy(b[fanSeqAt+16:], `,"sent_ns":`)
	putDigits(b[fanSentAt:fanSentAt+19], uint64(sent))
	b[fanHeadLen-1] = ','
}

func putDigits(b []byte, v uint64) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
}

func getDigits(b []byte) (uint64, bool) {
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	return v, true
}

func splitmix(x *uint64) uint64 {
	*x += 0x9E3779B97F4A7C15
	z := *x
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

var fanSyms = []string{"AAPL", "MSFT", "GOOG", "AMZN", "NVDA", "META", "TSLA", "ORCL", "INTC", "CSCO", "ADBE", "QCOM"}

// fanFiller: what follows the head of message seq, n bytes.
func fanFiller(seq uint64, n int) []byte {
	b := make([]byte, 0, n+160)
	b = append(b, `"data":[`...)
	x := seq
	for i := uint64(0); len(b) < n; i++ {
		r := splitmix(&x)
		b = append(b, `{"id":`...)
		b = strconv.AppendUint(b, seq*100+i, 10)
		b = append(b, `,"sym":"`...)
		b = append(b, fanSyms[r%uint64(len(fanSyms))]...)
		b = append(b, `","px":`...)
		b = strconv.AppendUint(b, 100+(r>>8)%900, 10)
		b = append(b, '.')
		b = strconv.AppendUint(b, 10+(r>>20)%90, 10)
		b = append(b, `,"qty":`...)
		b = strconv.AppendUint(b, 1+(r>>28)%5000, 10)
		b = append(b, `,"side":"`...)
		b = append(b, [2]string{"buy", "sell"}[(r>>40)&1]...)
		b = append(b, `"},`...)
	}
	b = b[:n]
	if n > 0 {
		b[n-1] = '}'
	}
	return b
}

// ---------------------------------------------------------------- shared state

var (
	fanCounts   []atomic.Int64 // deliveries of message s, at s % len
	fanSentNs   []atomic.Int64 // its send time, at s % len
	fanLive     atomic.Int64   // subscribers still running: a message is complete when that many have it
	fanFinal    atomic.Int64   // messages published in all, once the publisher has stopped and drained (-1 before)
	fanDeadline atomic.Int64   // unix ns: subscribers give up then (0 before)
	fanEfd      int            // eventfd: a message was completed, or a subscriber failed

	fanDelivered  atomic.Uint64 // in the window: deliveries,
	fanWire       atomic.Uint64 // their frames' bytes on the wire,
	fanCompressed atomic.Uint64 // and how many were compressed (RSV1)
	fanAll        atomic.Uint64 // deliveries from the start to the end
	fanInflates   atomic.Uint64 // inflates done (the others were a compressed payload seen already)
)

func fanSignal() {
	var one [8]byte
	binary.LittleEndian.PutUint64(one[:], 1)
	_, _ = rawWrite(fanEfd, one[:])
}

// The loops' system calls bypass Go's scheduler (RawSyscall): each loop has
// a P of its own (GOMAXPROCS is raised to cover them), so a wait in
// epoll_wait need not hand its P over and take one back, and sysmon, with
// no system call to retake, sleeps. Otherwise that costs more than the
// reads (about 20% of the client's CPU). The garbage collector is off
// meanwhile (its stop-the-world would wait for a loop's epoll_wait).
func rawRead(fd int, b []byte) (int, error) {
	n, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

func rawWrite(fd int, b []byte) (int, error) {
	n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

func rawEpollWait(ep int, events []syscall.EpollEvent, msec int) (int, error) {
	n, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_WAIT, uintptr(ep), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), uintptr(msec), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// deflateAgreed: the 101's Sec-WebSocket-Extensions, if it agrees
// permessage-deflate: whether the server keeps no context, and its window.
func deflateAgreed(head string) (ext string, ok, noContext bool, bits int, err error) {
	bits = 15
	for _, l := range strings.Split(head, "\r\n")[1:] {
		k, v, found := strings.Cut(l, ":")
		if !found || !strings.EqualFold(strings.TrimSpace(k), "Sec-WebSocket-Extensions") {
			continue
		}
		ext = strings.TrimSpace(v)
		params := strings.Split(ext, ";")
		if strings.TrimSpace(params[0]) != "permessage-deflate" || strings.Contains(ext, ",") {
			return ext, false, false, 0, fmt.Errorf("extensions answered: %q", ext)
		}
		for _, p := range params[1:] {
			name, val, _ := strings.Cut(strings.TrimSpace(p), "=")
			switch name {
			case "server_no_context_takeover":
				noContext = true
			case "server_max_window_bits":
				n, e := strconv.Atoi(strings.Trim(val, `"`))
				if e != nil || n < 8 || n > 15 {
					return ext, false, false, 0, fmt.Errorf("extensions answered: %q", ext)
				}
				bits = n
			case "client_no_context_takeover", "client_max_window_bits":
			default:
				return ext, false, false, 0, fmt.Errorf("extensions answered: %q", ext)
			}
		}
		ok = true
	}
	return
}

// ---------------------------------------------------------------- subscribers

type sconn struct {
	fd      int
	p       parser
	next    uint64 // the sequence number due next
	out     []byte
	wantOut bool
	state   int
	rest    []byte
	ctx     bool   // the server keeps a compression context: inflate with hist
	hist    []byte // the last (up to 2^window bits) bytes of what it inflated
	histMax int
	bad     string // why a message was wrong (its kind of ending)
	kind    string
	err     string
}

// floop: one OS thread's epoll loop over a share of the subscribers.
type floop struct {
	ep    int
	conns map[int]*sconn
	buf   []byte
	fr    io.ReadCloser
	src   bytes.Reader
	zbuf  []byte
	plain []byte
	key   []byte
	cache map[string][]byte // compressed payload (prefixed with seq when a context is kept) -> inflated
	order []string
	fill  [128]struct {
		seq uint64
		b   []byte
	}
	hist                                *histogram
	now                                 int64
	ph                                  int32
	swept                               bool
	dMeas, wMeas, cMeas, dAll, inflates uint64
	results                             []*sconn
}

func (l *floop) filler(seq uint64) []byte {
	e := &l.fill[seq%uint64(len(l.fill))]
	if e.b == nil || e.seq != seq {
		e.seq, e.b = seq, fanFiller(seq, *flagSize-fanHeadLen)
	}
	return e.b
}

func (l *floop) nowNs() int64 {
	if l.now == 0 {
		l.now = time.Now().UnixNano()
	}
	return l.now
}

// inflate: a compressed message (RFC 7692 7.2.2: the tail 00 00 ff ff put
// back, and an empty final block so that the reader ends cleanly). The same
// payload inflates to the same text (with no context, or after the same
// messages with one), so each is inflated once per loop and then compared.
func (l *floop) inflate(c *sconn, comp []byte) ([]byte, error) {
	k := comp
	if c.ctx {
		l.key = binary.BigEndian.AppendUint64(l.key[:0], c.next)
		l.key = append(l.key, comp...)
		k = l.key
	}
	if v, ok := l.cache[string(k)]; ok {
		return v, nil
	}
	l.zbuf = append(append(l.zbuf[:0], comp...), 0, 0, 0xff, 0xff, 1, 0, 0, 0xff, 0xff)
	l.src.Reset(l.zbuf)
	var dict []byte
	if c.ctx {
		dict = c.hist
	}
	if l.fr == nil {
		l.fr = flate.NewReader(&l.src)
	}
	if err := l.fr.(flate.Resetter).Reset(&l.src, dict); err != nil {
		return nil, err
	}
	if cap(l.plain) < *flagSize+1 {
		l.plain = make([]byte, 0, *flagSize+4096)
	}
	l.plain = l.plain[:0]
	for {
		if len(l.plain) == cap(l.plain) {
			return nil, fmt.Errorf("inflates to over %d bytes", len(l.plain))
		}
		n, err := l.fr.Read(l.plain[len(l.plain):cap(l.plain)])
		l.plain = l.plain[:len(l.plain)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	l.inflates++
	v := append([]byte(nil), l.plain...)
	ks := string(k)
	l.cache[ks] = v
	l.order = append(l.order, ks)
	if len(l.order) > 4*(*flagWindow)+64 {
		delete(l.cache, l.order[0])
		l.order = l.order[1:]
	}
	return v, nil
}

// onMsg: one whole data message for c; anything wrong sets c.bad and the
// parser's error, which ends the connection.
func (l *floop) onMsg(c *sconn, op byte, rsv1 bool, payload []byte, wire int) {
	bad := func(kind, f string, a ...any) {
		c.bad, c.p.protoError = kind, fmt.Sprintf(f, a...)
	}
	if op != 0x1 {
		bad("corrupt", "message %d of type %d, text sent", c.next, op)
		return
	}
	plain := payload
	if rsv1 {
		var err error
		if plain, err = l.inflate(c, payload); err != nil {
			bad("corrupt", "message %d: inflate: %v", c.next, err)
			return
		}
	}
	if len(plain) != *flagSize {
		bad("corrupt", "message %d of %d bytes, %d sent", c.next, len(plain), *flagSize)
		return
	}
	seq, ok1 := getDigits(plain[fanSeqAt : fanSeqAt+16])
	sent, ok2 := getDigits(plain[fanSentAt : fanSentAt+19])
	if !ok1 || !ok2 || string(plain[:fanSeqAt]) != `{"seq":` || plain[fanHeadLen-1] != ',' {
		bad("corrupt", "message %d: head %q", c.next, plain[:fanHeadLen])
		return
	}
	switch {
	case seq > c.next:
		bad("lost", "messages %d to %d never came (%d next)", c.next, seq-1, seq)
		return
	case seq < c.next:
		bad("out of order", "message %d after %d", seq, c.next-1)
		return
	}
	ring := uint64(len(fanSentNs))
	if int64(sent) != fanSentNs[seq%ring].Load() || !bytes.Equal(plain[fanHeadLen:], l.filler(seq)) {
		bad("corrupt", "message %d differs from what was sent", seq)
		return
	}
	if c.ctx && rsv1 {
		c.hist = append(c.hist, plain...)
		if over := len(c.hist) - c.histMax; over > 0 {
			copy(c.hist, c.hist[over:])
			c.hist = c.hist[:c.histMax]
		}
	}
	if l.ph == phaseMeasure {
		l.hist.add(uint64(max(l.nowNs()-int64(sent), 0)), 1)
		l.dMeas++
		l.wMeas += uint64(wire)
		if rsv1 {
			l.cMeas++
		}
	}
	l.dAll++
	c.next++
	if fanCounts[seq%ring].Add(1) >= fanLive.Load() {
		fanSignal()
	}
}

func (l *floop) arm(c *sconn, out bool) {
	if c.wantOut == out {
		return
	}
	c.wantOut = out
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(c.fd)}
	if out {
		ev.Events |= syscall.EPOLLOUT
	}
	_ = syscall.EpollCtl(l.ep, syscall.EPOLL_CTL_MOD, c.fd, &ev)
}

// send, flush: as load mode's (a subscriber sends only pongs and its close).
func (l *floop) send(c *sconn, b []byte) bool {
	if len(c.out) > 0 {
		c.out = append(c.out[:len(c.out):len(c.out)], b...)
		return true
	}
	c.out = b
	l.flush(c)
	return c.state != stDone
}

func (l *floop) flush(c *sconn) {
	for len(c.out) > 0 {
		n, err := rawWrite(c.fd, c.out)
		if err == syscall.EAGAIN {
			l.arm(c, true)
			return
		}
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			l.fail(c, "write error", err.Error())
			return
		}
		c.out = c.out[n:]
	}
	c.out = nil
	l.arm(c, false)
}

func (l *floop) finish(c *sconn, kind, err string) {
	if c.state == stDone {
		return
	}
	if c.state == stRunning {
		// One fewer to wait for: the publisher is told, so that it does not
		// wait for this one's deliveries (the run has an error anyway).
		fanLive.Add(-1)
		fanSignal()
	}
	c.kind, c.err, c.state = kind, err, stDone
	_ = syscall.EpollCtl(l.ep, syscall.EPOLL_CTL_DEL, c.fd, nil)
	syscall.Close(c.fd)
	delete(l.conns, c.fd)
}

func (l *floop) fail(c *sconn, kind, err string) {
	if c.state == stCloseSent || c.state == stCloseAnswered {
		kind = "close: " + kind
	}
	l.finish(c, kind, err)
}

// progress: once every message is in (the publisher has said how many),
// our close.
func (l *floop) progress(c *sconn) {
	if f := fanFinal.Load(); c.state == stRunning && f >= 0 && int64(c.next) >= f {
		c.state = stCloseSent
		l.send(c, closeFrame(1000))
	}
}

func (l *floop) onData(c *sconn, data []byte) {
	p := &c.p
	p.feed(data)
	if p.protoError != "" {
		kind := c.bad
		if kind == "" {
			kind = "bad frame"
		}
		l.fail(c, kind, p.protoError)
		return
	}
	for _, pong := range p.pongs {
		if !l.send(c, pong) {
			return
		}
	}
	p.pongs = p.pongs[:0]
	if p.closeCode >= 0 {
		switch c.state {
		case stRunning:
			l.fail(c, "closed by the server", fmt.Sprintf("close %d after %d messages", p.closeCode, c.next))
			return
		case stCloseSent:
			if p.closeCode != 1000 {
				l.finish(c, "close: answered with another code", strconv.Itoa(p.closeCode))
				return
			}
			c.state = stCloseAnswered
		}
	}
	l.progress(c)
}

func (l *floop) onEOF(c *sconn, err error) {
	switch {
	case c.state == stCloseAnswered && err == nil:
		l.finish(c, "clean", "")
	case c.state == stCloseAnswered:
		l.finish(c, "close: answered, then a read error", err.Error())
	case c.state == stCloseSent:
		l.finish(c, "close: EOF or error, no close frame", fmt.Sprint(err))
	case err == nil:
		l.finish(c, "closed by the server", "EOF without a close frame during the load")
	default:
		l.finish(c, "read error", err.Error())
	}
}

func (l *floop) deadline(c *sconn) {
	switch c.state {
	case stRunning:
		l.finish(c, "stalled", fmt.Sprintf("%d of %d messages never came", fanFinal.Load()-int64(c.next), fanFinal.Load()))
	case stCloseSent:
		l.finish(c, "close: no answer", "")
	case stCloseAnswered:
		l.finish(c, "close: answered, TCP left open", "")
	}
}

func (l *floop) run() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	events := make([]syscall.EpollEvent, 1024)
	for _, c := range l.results {
		if c.state != stDone && len(c.rest) > 0 {
			l.now = 0
			l.onData(c, c.rest)
		}
	}
	for len(l.conns) > 0 {
		if d := fanDeadline.Load(); d != 0 && time.Now().UnixNano() >= d {
			for _, c := range l.conns {
				l.deadline(c)
			}
			break
		}
		if !l.swept && fanFinal.Load() >= 0 {
			l.swept = true
			for _, c := range l.conns {
				l.progress(c)
			}
		}
		n, err := rawEpollWait(l.ep, events, 50)
		if err != nil && err != syscall.EINTR {
			panic(err)
		}
		l.ph = phase.Load()
		for i := 0; i < n; i++ {
			c := l.conns[int(events[i].Fd)]
			if c == nil {
				continue
			}
			ev := events[i].Events
			if ev&syscall.EPOLLOUT != 0 {
				l.flush(c)
				if c.state == stDone {
					continue
				}
			}
			if ev&(syscall.EPOLLIN|syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) == 0 {
				continue
			}
			k, rerr := rawRead(c.fd, l.buf)
			switch {
			case rerr == syscall.EAGAIN || rerr == syscall.EINTR:
			case rerr != nil:
				l.onEOF(c, rerr)
			case k == 0:
				l.onEOF(c, nil)
			default:
				l.now = 0
				l.onData(c, l.buf[:k])
			}
		}
		l.flushCounts()
	}
	l.flushCounts()
	syscall.Close(l.ep)
}

func (l *floop) flushCounts() {
	if l.dAll > 0 {
		fanAll.Add(l.dAll)
		fanDelivered.Add(l.dMeas)
		fanWire.Add(l.wMeas)
		fanCompressed.Add(l.cMeas)
		l.dAll, l.dMeas, l.wMeas, l.cMeas = 0, 0, 0, 0
	}
	if l.inflates > 0 {
		fanInflates.Add(l.inflates)
		l.inflates = 0
	}
}

// ---------------------------------------------------------------- the publisher

type pubResult struct {
	sent, acked, measured uint64
	kind, err             string
	complete              *histogram // send to the last delivery, window only
}

// runPublisher: on this OS thread, the publisher's socket and the eventfd;
// moves the phases (edge at each), keeps -window messages not yet
// delivered to every subscriber, then drains, says how many there were
// (fanFinal) and closes.
func runPublisher(fd int, rest []byte, edge func(int32)) pubResult {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	res := pubResult{kind: "clean", complete: new(histogram)}
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		panic(err)
	}
	defer syscall.Close(ep)
	for _, f := range []int{fd, fanEfd} {
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(f)}
		if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, f, &ev); err != nil {
			panic(err)
		}
	}
	ring := uint64(len(fanCounts))
	p := &parser{closeCode: -1}
	var out []byte
	wantOut := false
	state := stRunning
	ph := int32(phaseWarmup)
	fail := func(kind, e string) {
		if res.kind == "clean" {
			res.kind, res.err = kind, e
		}
		state = stDone
	}
	arm := func(on bool) {
		if wantOut != on {
			wantOut = on
			ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(fd)}
			if on {
				ev.Events |= syscall.EPOLLOUT
			}
			_ = syscall.EpollCtl(ep, syscall.EPOLL_CTL_MOD, fd, &ev)
		}
	}
	flush := func() {
		for len(out) > 0 {
			n, err := rawWrite(fd, out)
			if err == syscall.EAGAIN {
				arm(true)
				return
			}
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				fail("write error", err.Error())
				return
			}
			out = out[n:]
		}
		out = nil
		arm(false)
	}
	send := func(b []byte) {
		out = append(out, b...)
		flush()
	}
	msg := make([]byte, *flagSize)
	var fill []byte
	publish := func() {
		for state == stRunning && ph != phaseStop && res.sent-res.acked < uint64(*flagWindow) {
			s := res.sent
			if fill = fanFiller(s, *flagSize-fanHeadLen); len(fill) > 0 {
				copy(msg[fanHeadLen:], fill)
			}
			now := time.Now().UnixNano()
			fanSentNs[s%ring].Store(now)
			fanHead(msg, s, now)
			res.sent++
			if ph == phaseMeasure {
				res.measured++
			}
			send(clientFrame(0x1, msg))
		}
	}
	complete := func() {
		var b [8]byte
		_, _ = rawRead(fanEfd, b[:])
		for res.acked < res.sent && fanCounts[res.acked%ring].Load() >= fanLive.Load() {
			if ph == phaseMeasure {
				res.complete.add(uint64(max(time.Now().UnixNano()-fanSentNs[res.acked%ring].Load(), 0)), 1)
			}
			fanCounts[res.acked%ring].Store(0)
			res.acked++
		}
	}
	if len(rest) > 0 {
		fail("bad frame", "bytes after the 101")
	}
	publish()
	warmEnd := time.Now().Add(*flagWarmup)
	measureEnd := warmEnd.Add(*flagDuration)
	var drainEnd, closeEnd time.Time
	final := false
	events := make([]syscall.EpollEvent, 8)
	buf := make([]byte, 4096)
	for {
		t := time.Now()
		switch {
		case ph == phaseWarmup && !t.Before(warmEnd):
			ph = phaseMeasure
			phase.Store(ph)
			edge(ph)
		case ph == phaseMeasure && !t.Before(measureEnd):
			ph = phaseStop
			phase.Store(ph)
			edge(ph)
			drainEnd = t.Add(*flagCloseTime)
		}
		if ph == phaseStop && !final && (res.acked == res.sent || !t.Before(drainEnd) || fanLive.Load() == 0) {
			final = true
			fanFinal.Store(int64(res.sent))
			closeEnd = t.Add(*flagCloseTime)
			fanDeadline.Store(closeEnd.UnixNano())
			if state == stRunning {
				state = stCloseSent
				send(closeFrame(1000))
			}
		}
		if final && (state == stDone || !t.Before(closeEnd)) {
			switch state {
			case stCloseSent:
				fail("close: no answer", "")
			case stCloseAnswered:
				fail("close: answered, TCP left open", "")
			}
			break
		}
		next := warmEnd
		switch {
		case final:
			next = closeEnd
		case ph == phaseStop:
			next = drainEnd
		case ph == phaseMeasure:
			next = measureEnd
		}
		timeout := min(int(time.Until(next)/time.Millisecond)+1, 100)
		n, err := rawEpollWait(ep, events, timeout)
		if err != nil && err != syscall.EINTR {
			panic(err)
		}
		for i := 0; i < n; i++ {
			if int(events[i].Fd) == fanEfd {
				complete()
				continue
			}
			if state == stDone {
				continue
			}
			if events[i].Events&syscall.EPOLLOUT != 0 {
				flush()
			}
			if events[i].Events&(syscall.EPOLLIN|syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) == 0 {
				continue
			}
			k, rerr := rawRead(fd, buf)
			switch {
			case rerr == syscall.EAGAIN || rerr == syscall.EINTR:
			case rerr != nil || k == 0:
				switch {
				case state == stCloseAnswered && k == 0:
					state = stDone
				case state == stCloseAnswered || state == stCloseSent:
					fail("close: EOF or error, no close frame", fmt.Sprint(rerr))
				default:
					fail("closed by the server", fmt.Sprintf("EOF or error during the load: %v", rerr))
				}
			default:
				p.feed(buf[:k])
				switch {
				case p.protoError != "":
					fail("bad frame", p.protoError)
				case p.done > 0:
					fail("got a message", "the publisher (not subscribed) was sent a message")
				}
				for _, pong := range p.pongs {
					send(pong)
				}
				p.pongs = p.pongs[:0]
				if p.closeCode >= 0 && state == stRunning {
					fail("closed by the server", fmt.Sprintf("close %d", p.closeCode))
				} else if p.closeCode >= 0 && state == stCloseSent {
					if p.closeCode != 1000 {
						fail("close: answered with another code", strconv.Itoa(p.closeCode))
					} else {
						state = stCloseAnswered
					}
				}
			}
		}
		if !final {
			publish()
		}
	}
	_ = syscall.Close(fd)
	return res
}

// ---------------------------------------------------------------- the mode

func modeFanout() {
	if *flagLoops < 1 {
		fatalf("fanout: -loops >= 1")
	}
	// Defaults of their own: the topic, and 1 KiB messages.
	path, sizeSet := fanTopicPath, false
	flag.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "path":
			path = *flagPath
		case "size":
			sizeSet = true
		}
	})
	if !sizeSet {
		*flagSize = 1024
	}
	if *flagSize < fanHeadLen+10 {
		fatalf("fanout: -size >= %d", fanHeadLen+10)
	}
	ring := 2 * (*flagWindow + 16)
	fanCounts, fanSentNs = make([]atomic.Int64, ring), make([]atomic.Int64, ring)
	fanFinal.Store(-1)
	efd, _, e := syscall.Syscall(syscall.SYS_EVENTFD2, 0, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if e != 0 {
		fatalf("eventfd: %v", e)
	}
	fanEfd = int(efd)

	offer := ""
	if *flagDeflate {
		offer = "Sec-WebSocket-Extensions: permessage-deflate; client_no_context_takeover"
		if !*flagDeflateCtx {
			offer += "; server_no_context_takeover"
		}
		offer += "\r\n"
	}
	subs, fails, firstFail, connectS := connectN(*flagConns, path, offer)
	pubs, pfails, pfirst, _ := connectN(1, *flagPubPath, "")
	for k, n := range pfails {
		fails["publisher: "+k] += n
		if firstFail == "" {
			firstFail = "publisher: " + pfirst
		}
	}
	loops := make([]*floop, *flagLoops)
	for i := range loops {
		ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
		if err != nil {
			panic(err)
		}
		loops[i] = &floop{ep: ep, conns: map[int]*sconn{}, buf: make([]byte, readBufSize()),
			cache: map[string][]byte{}, hist: new(histogram)}
	}
	agreed, extErrs, ctxConns := 0, 0, 0
	extText, firstExtErr := "", ""
	var all []*sconn
	for i, x := range subs {
		c := &sconn{fd: -1, p: parser{closeCode: -1, collect: true, maxMsg: 4 * (*flagSize + 14)}, rest: x.rest}
		ext, ok, noCtx, bits, err := deflateAgreed(x.head)
		switch {
		case err != nil || (ext != "" && !*flagDeflate):
			extErrs++
			if firstExtErr == "" {
				firstExtErr = fmt.Sprintf("%v (%q)", err, ext)
			}
		case ok:
			agreed++
			extText = ext
			c.p.deflate = true
			if !noCtx {
				c.ctx, c.histMax = true, 1<<bits
				c.hist = make([]byte, 0, c.histMax+*flagSize)
				ctxConns++
			}
		}
		l := loops[i%len(loops)]
		c.p.onMsg = func(op byte, rsv1 bool, payload []byte, wire int) { l.onMsg(c, op, rsv1, payload, wire) }
		fd, err := takeFD(x.c)
		c.fd = fd
		if err != nil {
			c.kind, c.err, c.state = "descriptor", err.Error(), stDone
		} else {
			ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(fd)}
			if err := syscall.EpollCtl(l.ep, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
				panic(err)
			}
			l.conns[fd] = c
			fanLive.Add(1)
		}
		l.results = append(l.results, c)
		all = append(all, c)
	}

	var sc0, sc1, me0, me1, sw0, sw1, mw0, mw1 float64
	var ct0, ct1 map[string][2]uint64
	var t0 time.Time
	var wall float64
	edge := func(ph int32) {
		if ph == phaseMeasure {
			sc0, ct0, me0, t0 = procCPU(*flagServerPID), cpuTicks(), selfCPU(), time.Now()
			sw0, mw0 = runqWait(*flagServerPID), runqWait(0)
			return
		}
		wall = time.Since(t0).Seconds()
		sc1, ct1, me1 = procCPU(*flagServerPID), cpuTicks(), selfCPU()
		sw1, mw1 = runqWait(*flagServerPID), runqWait(0)
	}
	var pr pubResult
	runtime.GOMAXPROCS(*flagLoops + 2)
	gc := debug.SetGCPercent(-1)
	if len(pubs) == 1 {
		var wg sync.WaitGroup
		for _, l := range loops {
			wg.Add(1)
			go func(l *floop) { defer wg.Done(); l.run() }(l)
		}
		fd, err := takeFD(pubs[0].c)
		if err != nil {
			fatalf("publisher: %v", err)
		}
		pr = runPublisher(fd, pubs[0].rest, edge)
		wg.Wait()
		debug.SetGCPercent(gc)
	} else {
		pr = pubResult{kind: "not connected", complete: new(histogram)}
		for _, l := range loops {
			for _, c := range l.conns {
				l.finish(c, "not run", "no publisher")
			}
		}
	}

	kinds := map[string]int{}
	firstErr := map[string]string{}
	errs := 0
	for _, c := range all {
		kinds[c.kind]++
		if c.kind != "clean" {
			errs++
			if firstErr[c.kind] == "" {
				firstErr[c.kind] = c.err
			}
		}
	}
	for _, n := range fails {
		errs += n
	}
	if pr.kind != "clean" {
		errs++
	}
	if *flagDeflate && agreed != len(subs) {
		errs += len(subs) - agreed
	}
	h := new(histogram)
	for _, l := range loops {
		for i := range h.b {
			h.b[i].Add(l.hist.b[i].Load())
		}
	}
	qs, n := h.quantiles([]float64{0.5, 0.9, 0.99, 0.999, 1.0})
	cq, _ := pr.complete.quantiles([]float64{0.5, 0.99, 1.0})
	busy := map[string]float64{}
	for cpu, v1 := range ct1 {
		if v0, ok := ct0[cpu]; ok && v1[1] > v0[1] {
			busy[cpu] = float64(v1[0]-v0[0]) * 100 / float64(v1[1]-v0[1])
		}
	}
	d := fanDelivered.Load()
	per := func(x float64) any {
		if d == 0 {
			return nil
		}
		return x / float64(d)
	}
	out := map[string]any{
		"mode": "fanout", "subscribers": *flagConns, "connected": len(subs), "publisher_connected": len(pubs) == 1,
		"connect_failures": fails, "first_connect_failure": firstFail, "connect_s": connectS,
		"path": path, "pub_path": *flagPubPath, "loops": *flagLoops, "window": *flagWindow, "size": *flagSize,
		"deflate_offered": *flagDeflate, "deflate_context_offered": *flagDeflateCtx, "deflate_agreed": agreed,
		"deflate_with_context": ctxConns, "extension": extText, "extension_errors": extErrs,
		"first_extension_error": firstExtErr,
		"wall_s":                wall, "deliveries": d, "deliveries_per_s": float64(d) / max(wall, 1e-9),
		"published": pr.measured, "published_per_s": float64(pr.measured) / max(wall, 1e-9),
		"published_total": pr.sent, "completed_total": pr.acked, "delivered_total": fanAll.Load(),
		"latency_samples": n, "p50_us": qs[0] / 1e3, "p90_us": qs[1] / 1e3, "p99_us": qs[2] / 1e3,
		"p999_us": qs[3] / 1e3, "max_us": qs[4] / 1e3,
		"complete_p50_us": cq[0] / 1e3, "complete_p99_us": cq[1] / 1e3, "complete_max_us": cq[2] / 1e3,
		"wire_bytes_per_delivery": per(float64(fanWire.Load())), "compressed_share": per(float64(fanCompressed.Load())),
		"inflates": fanInflates.Load(),
		"endings":  kinds, "first_error": firstErr, "publisher_ending": pr.kind, "publisher_error": pr.err,
		"errors": errs, "cpu_busy_pct": busy, "load_cpu_s": me1 - me0, "load_runq_wait_s": mw1 - mw0, "load_cpu_us_per_delivery": per((me1 - me0) * 1e6),
	}
	if *flagServerPID > 0 {
		out["server_cpu_s"] = sc1 - sc0
		out["server_alive"] = sc1 >= 0
		out["server_runq_wait_s"] = sw1 - sw0
		if sc1 >= 0 {
			out["server_cpu_us_per_delivery"] = per((sc1 - sc0) * 1e6)
		}
	}
	emit(out)
}

// runqWait: seconds the threads of process pid (0: this one) have spent
// runnable but waiting for a CPU (/proc/PID/task/*/schedstat, field 2).
func runqWait(pid int) float64 {
	dir := "/proc/self/task"
	if pid > 0 {
		dir = "/proc/" + strconv.Itoa(pid) + "/task"
	}
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return -1
	}
	var ns float64
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if f := strings.Fields(string(b)); err == nil && len(f) >= 2 {
			v, _ := strconv.ParseFloat(f[1], 64)
			ns += v
		}
	}
	return ns / 1e9
}

func fatalf(f string, a ...any) {
	fmt.Fprintf(os.Stderr, "ws_load: "+f+"\n", a...)
	os.Exit(2)
}
