// ws_load: the WebSocket load generator of perf/compare_ws (RFC 6455 client,
// framed by hand, Go's standard library only).
//
//	ws_load -addr 127.0.0.1:P -conns 100 -window 16 -size 64 -warmup 1s -duration 5s -server-pid PID
//	ws_load -mode hold -addr 127.0.0.1:P -conns 10000      # until stdin closes or SIGTERM
//	ws_load -mode check -addr 127.0.0.1:P                  # is it an echo?
//	ws_load -mode fanout -addr 127.0.0.1:P -conns 10000 -window 8 [-deflate [-deflate-context]] [-loops N]
//
// load: opens -conns connections (-dial-parallel handshakes at a time, from
// -sources source addresses 127.0.0.F.. when asked, each checked: 101 and the
// right Sec-WebSocket-Accept), then every connection keeps -window messages
// of -size bytes in flight: it sends -window at once, and for every echo that
// comes back sends one more (the echoes of one read go out as one write).
// The handshakes run on goroutines; the load itself on one OS thread, one
// level-triggered epoll loop over every socket (raw read and write: no
// goroutine, no Go poller per message), so that the client costs little more
// than the kernel's TCP path.
// Each echo is checked whole, byte for byte and for its type, against what
// was sent; a server may cut it into fragments. A round trip is the time from
// the write that carried a message to the read that completed its echo
// (echoes come back in order on a connection). After -warmup the measured
// window of -duration starts: echoes received in it are counted and their
// round trips recorded (a log-linear histogram, under 1% error), and at its
// edges the server's utime+stime (/proc/PID/stat, all its threads), /proc/stat
// per CPU and this process's own rusage are read. Then every connection stops
// sending, waits for its echoes in flight, sends a close (1000) and waits for
// the server's close and EOF (-close-timeout in all). One JSON object on
// stdout says what happened, including every way a connection went wrong.
//
// Frames are masked (RFC 6455 5.3) with one random key for the run, so the
// frames a connection sends are built once and the client does no masking per
// message; the server unmasks every byte as always.
//
// hold: opens -conns connections, sends one -size message on each and waits
// for its echo, prints {"event":"holding",...} and keeps them open (answering
// pings) until stdin reaches EOF or SIGTERM, then prints how many are still
// open and exits.
//
// check: one connection; text and binary messages of 0 B to 200 KiB echoed
// one at a time, type and bytes checked; exits 1 if any is wrong.
//
// fanout (fanout.go): pub/sub on ours' GET /test/ws/topic. -conns
// subscribers upgrade on -path (default /test/ws/topic?name=bench), then one
// publisher on -pub-path (?name=bench&subscribe=0). With -deflate the
// subscribers offer permessage-deflate with client_ and
// server_no_context_takeover (-deflate-context: without the latter, so that
// a server may keep a context per socket) and inflate RSV1 messages, with
// each subscriber's history when the 101 says the server keeps a context;
// the publisher offers nothing and sends plain frames. The publisher sends
// -size byte text messages (default 1 KiB: a sequence number and the send
// time in unix ns, then JSON-ish records that vary with the sequence
// number), at most -window of them not yet delivered to every subscriber
// (deliveries are counted per sequence number; the subscriber that completes
// one wakes the publisher through an eventfd). Every subscriber checks every
// message: its type, its sequence number (none lost, none out of order) and
// every byte, after inflating; the delay is its read time less its send
// time. The subscribers are spread over -loops epoll loops, an OS thread
// each, the publisher on one of its own. After -warmup, a window of
// -duration: deliveries and messages published per second, the delay's
// quantiles, the time for a message to reach everyone, frame bytes per
// delivery, server (-server-pid) and own CPU per delivery. Then the
// publisher stops, waits until everything is delivered (-close-timeout),
// and all close with the closing handshake (1000). One JSON object;
// "errors" counts everything that went wrong.
package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/bits"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

var (
	flagMode        = flag.String("mode", "load", "load | hold | check | fanout")
	flagAddr        = flag.String("addr", "127.0.0.1:8080", "server host:port")
	flagPath        = flag.String("path", "/test/ws", "request path")
	flagConns       = flag.Int("conns", 100, "connections")
	flagWindow      = flag.Int("window", 16, "messages in flight per connection")
	flagSize        = flag.Int("size", 64, "message payload bytes")
	flagText        = flag.Bool("text", false, "text messages (ASCII) instead of binary")
	flagWarmup      = flag.Duration("warmup", time.Second, "load before the measured window")
	flagDuration    = flag.Duration("duration", 5*time.Second, "measured window")
	flagServerPID   = flag.Int("server-pid", 0, "read this process's CPU time at the window's edges")
	flagClkTck      = flag.Int("clk-tck", 100, "clock ticks per second of /proc/PID/stat")
	flagSources     = flag.Int("sources", 0, "spread connections over this many source addresses (0: the kernel's choice)")
	flagFirstSource = flag.Int("first-source", 2, "first source address 127.0.0.N (with -sources)")
	flagParallel    = flag.Int("dial-parallel", 128, "handshakes in progress at a time")
	flagDialTimeout = flag.Duration("dial-timeout", 20*time.Second, "per connection: connect and handshake")
	flagCloseTime   = flag.Duration("close-timeout", 5*time.Second, "after the window: echoes in flight and the closing handshake, all connections")
	flagReadBuf     = flag.Int("read-buf", 0, "bytes read at most per read (0: 256 KiB; one buffer for all connections)")
)

// ---------------------------------------------------------------- histogram

// Log-linear: values below 128 exact, above it 64 sub-buckets per power of two.
const histBuckets = 128 + 58*64

type histogram struct{ b [histBuckets]atomic.Uint64 }

func histIndex(v uint64) int {
	if v < 128 {
		return int(v)
	}
	e := bits.Len64(v) - 7 // >= 1
	i := 128 + (e-1)*64 + int(v>>uint(e)) - 64
	if i >= histBuckets {
		i = histBuckets - 1
	}
	return i
}

func histValue(i int) float64 { // the middle of bucket i
	if i < 128 {
		return float64(i)
	}
	e := (i-128)/64 + 1
	m := uint64((i-128)%64 + 64)
	return float64(m<<uint(e)) + float64(uint64(1)<<uint(e))/2
}

func (h *histogram) add(v uint64, n uint64) { h.b[histIndex(v)].Add(n) }

func (h *histogram) quantiles(qs []float64) (out []float64, total uint64) {
	counts := make([]uint64, histBuckets)
	for i := range counts {
		counts[i] = h.b[i].Load()
		total += counts[i]
	}
	out = make([]float64, len(qs))
	for qi, q := range qs {
		want := uint64(q * float64(total))
		if want >= total && total > 0 {
			want = total - 1
		}
		var seen uint64
		for i, c := range counts {
			seen += c
			if c > 0 && seen > want {
				out[qi] = histValue(i)
				break
			}
		}
	}
	return out, total
}

// ---------------------------------------------------------------- frames

var maskKey [4]byte

// clientFrame: one masked frame (FIN set) of opcode op carrying payload.
func clientFrame(op byte, payload []byte) []byte {
	n := len(payload)
	var hdr []byte
	switch {
	case n < 126:
		hdr = []byte{0x80 | op, 0x80 | byte(n)}
	case n < 65536:
		hdr = []byte{0x80 | op, 0x80 | 126, byte(n >> 8), byte(n)}
	default:
		hdr = make([]byte, 10)
		hdr[0], hdr[1] = 0x80|op, 0x80|127
		binary.BigEndian.PutUint64(hdr[2:], uint64(n))
	}
	f := append(hdr, maskKey[:]...)
	start := len(f)
	f = append(f, payload...)
	for i := range payload {
		f[start+i] ^= maskKey[i&3]
	}
	return f
}

func closeFrame(code uint16) []byte {
	return clientFrame(0x8, []byte{byte(code >> 8), byte(code)})
}

// ---------------------------------------------------------------- handshake

var dialSeq atomic.Uint64

func dial(addr string) (*net.TCPConn, []byte, error) {
	c, rest, _, err := dialWS(addr, *flagPath, "")
	return c, rest, err
}

// dialWS: a connection upgraded on path, with extra header lines (each
// ending in \r\n) in the request; the bytes read past the 101 and its head.
func dialWS(addr, path, extra string) (*net.TCPConn, []byte, string, error) {
	d := net.Dialer{Timeout: *flagDialTimeout}
	if *flagSources > 0 {
		i := int(dialSeq.Add(1)-1) % *flagSources
		d.LocalAddr = &net.TCPAddr{IP: net.IPv4(127, byte((*flagFirstSource+i)>>16), byte((*flagFirstSource+i)>>8), byte(*flagFirstSource+i))}
		d.Control = func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) {
				// The port is chosen at connect() for the whole 4-tuple, not at bind().
				serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, 24 /* IP_BIND_ADDRESS_NO_PORT */, 1)
			})
			if err != nil {
				return err
			}
			return serr
		}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, nil, "", fmt.Errorf("connect: %w", err)
	}
	tc := c.(*net.TCPConn)
	_ = tc.SetDeadline(time.Now().Add(*flagDialTimeout))
	var k [16]byte
	_, _ = rand.Read(k[:])
	key := base64.StdEncoding.EncodeToString(k[:])
	req := "GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + key + "\r\nSec-WebSocket-Version: 13\r\n" + extra + "\r\n"
	if _, err := tc.Write([]byte(req)); err != nil {
		tc.Close()
		return nil, nil, "", fmt.Errorf("handshake write: %w", err)
	}
	buf := make([]byte, 0, 1024)
	tmp := make([]byte, 1024)
	for {
		n, err := tc.Read(tmp)
		buf = append(buf, tmp[:n]...)
		if i := bytes.Index(buf, []byte("\r\n\r\n")); i >= 0 {
			head, rest := string(buf[:i]), append([]byte(nil), buf[i+4:]...)
			if err := checkHandshake(head, key); err != nil {
				tc.Close()
				return nil, nil, "", err
			}
			_ = tc.SetDeadline(time.Time{})
			return tc, rest, head, nil
		}
		if err != nil {
			tc.Close()
			return nil, nil, "", fmt.Errorf("handshake read: %w (got %q)", err, trunc(buf, 60))
		}
		if len(buf) > 16384 {
			tc.Close()
			return nil, nil, "", errors.New("handshake: answer head over 16 KiB")
		}
	}
}

func trunc(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

func checkHandshake(head, key string) error {
	lines := strings.Split(head, "\r\n")
	if f := strings.Fields(lines[0]); len(f) < 2 || f[1] != "101" {
		return fmt.Errorf("handshake: %q", lines[0])
	}
	sum := sha1.Sum([]byte(key + wsGUID))
	want := base64.StdEncoding.EncodeToString(sum[:])
	for _, l := range lines[1:] {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.EqualFold(strings.TrimSpace(k), "Sec-WebSocket-Accept") {
			if strings.TrimSpace(v) != want {
				return fmt.Errorf("handshake: Sec-WebSocket-Accept %q, want %q", strings.TrimSpace(v), want)
			}
			return nil
		}
	}
	return errors.New("handshake: no Sec-WebSocket-Accept")
}

// ---------------------------------------------------------------- a connection

// parser: the server's frames, byte by byte state, so that neither a header
// nor a payload needs to arrive whole in one read.
type parser struct {
	hdr        [14]byte
	hdrHave    int
	inFrame    bool
	fin        bool
	op         byte  // this frame's opcode
	remain     int64 // payload bytes of this frame still to come
	inMsg      bool
	msgOp      byte
	msgOff     int
	ctrl       []byte
	want       []byte // the payload every data message must carry (nil: any)
	wantOp     byte
	done       int // data messages completed in the last feed
	closeCode  int // -1: none received
	pongs      [][]byte
	protoError string
	// fanout: RSV1 allowed on a message's first frame (permessage-deflate),
	// and every data message collected whole and handed to onMsg (with the
	// bytes its frames took on the wire) instead of checked against want.
	deflate bool
	collect bool
	msgRSV1 bool
	msgWire int
	msg     []byte
	maxMsg  int
	onMsg   func(op byte, rsv1 bool, payload []byte, wire int)
}

func (p *parser) headerLen() int {
	if p.hdrHave < 2 {
		return 2
	}
	n := 2
	switch p.hdr[1] & 0x7f {
	case 126:
		n += 2
	case 127:
		n += 8
	}
	if p.hdr[1]&0x80 != 0 {
		n += 4
	}
	return n
}

// feed parses b; it sets p.done to the data messages completed in b. A
// protocol error or a wrong echo sets p.protoError and stops.
func (p *parser) feed(b []byte) {
	p.done = 0
	for len(b) > 0 && p.protoError == "" {
		if !p.inFrame {
			for p.hdrHave < p.headerLen() && len(b) > 0 {
				p.hdr[p.hdrHave] = b[0]
				p.hdrHave++
				b = b[1:]
			}
			if p.hdrHave < p.headerLen() {
				return
			}
			p.startFrame()
			if p.protoError != "" {
				return
			}
			if p.remain == 0 {
				p.endFrame()
			}
			continue
		}
		take := int(p.remain)
		if take > len(b) {
			take = len(b)
		}
		chunk := b[:take]
		b = b[take:]
		p.remain -= int64(take)
		if p.op >= 0x8 {
			p.ctrl = append(p.ctrl, chunk...)
		} else if p.collect {
			if len(p.msg)+take > p.maxMsg {
				p.protoError = fmt.Sprintf("a message of over %d bytes (on the wire)", p.maxMsg)
				return
			}
			p.msg = append(p.msg, chunk...)
		} else if p.want != nil {
			if p.msgOff+take > len(p.want) {
				p.protoError = fmt.Sprintf("echo longer than the %d bytes sent", len(p.want))
				return
			}
			if !bytes.Equal(chunk, p.want[p.msgOff:p.msgOff+take]) {
				p.protoError = fmt.Sprintf("echo differs from what was sent, in bytes %d-%d", p.msgOff, p.msgOff+take)
				return
			}
			p.msgOff += take
		} else {
			p.msgOff += take
		}
		if p.remain == 0 {
			p.endFrame()
		}
	}
}

func (p *parser) startFrame() {
	h := p.hdr[:p.hdrHave]
	p.hdrHave = 0
	rsv1 := false
	if h[0]&0x70 != 0 {
		op := h[0] & 0x0f
		if !p.deflate || h[0]&0x70 != 0x40 || (op != 0x1 && op != 0x2) {
			p.protoError = fmt.Sprintf("frame with reserved bits 0x%02x (opcode %d)", h[0]&0x70, op)
			return
		}
		rsv1 = true
	}
	if h[1]&0x80 != 0 {
		p.protoError = "masked frame from the server"
		return
	}
	p.fin, p.op = h[0]&0x80 != 0, h[0]&0x0f
	switch l := h[1] & 0x7f; l {
	case 126:
		p.remain = int64(binary.BigEndian.Uint16(h[2:4]))
	case 127:
		p.remain = int64(binary.BigEndian.Uint64(h[2:10]))
	default:
		p.remain = int64(l)
	}
	p.inFrame = true
	switch {
	case p.op >= 0x8:
		if p.remain > 125 || !p.fin {
			p.protoError = "bad control frame"
		}
		p.ctrl = p.ctrl[:0]
	case p.op == 0x0:
		if !p.inMsg {
			p.protoError = "continuation without a message"
		}
	case p.op == 0x1 || p.op == 0x2:
		if p.inMsg {
			p.protoError = "new message inside a fragmented one"
		}
		p.inMsg, p.msgOp, p.msgOff = true, p.op, 0
		p.msgRSV1, p.msgWire = rsv1, 0
		p.msg = p.msg[:0]
	default:
		p.protoError = fmt.Sprintf("unknown opcode %d", p.op)
	}
	if p.op < 0x8 {
		p.msgWire += len(h) + int(p.remain)
	}
}

func (p *parser) endFrame() {
	p.inFrame = false
	switch {
	case p.op == 0x8:
		if p.closeCode < 0 {
			p.closeCode = 1005
			if len(p.ctrl) >= 2 {
				p.closeCode = int(binary.BigEndian.Uint16(p.ctrl))
			}
		}
	case p.op == 0x9:
		p.pongs = append(p.pongs, clientFrame(0xA, p.ctrl))
	case p.op == 0xA:
	case p.fin:
		p.inMsg = false
		if p.collect {
			p.onMsg(p.msgOp, p.msgRSV1, p.msg, p.msgWire)
		} else if p.want != nil {
			if p.msgOff != len(p.want) {
				p.protoError = fmt.Sprintf("echo of %d bytes, %d sent", p.msgOff, len(p.want))
				return
			}
			if p.msgOp != p.wantOp {
				p.protoError = fmt.Sprintf("echo of type %d, %d sent", p.msgOp, p.wantOp)
				return
			}
		}
		p.done++
	}
}

// ---------------------------------------------------------------- load mode

const (
	phaseWarmup = iota
	phaseMeasure
	phaseStop
)

var (
	phase     atomic.Int32
	hist      histogram
	measured  atomic.Uint64 // echoes completed inside the window
	totalRecv atomic.Uint64
	frames    []byte // -window frames, back to back
	frameLen  int
	payload   []byte
	opcode    byte = 0x2
)

type outcome struct {
	kind string // "clean", or what went wrong
	err  string
	got  uint64 // echoes inside the window
	all  uint64 // echoes from the start to the end
}

func readBufSize() int {
	if *flagReadBuf > 0 {
		return *flagReadBuf
	}
	return 256 << 10 // one buffer for the whole loop
}

// lconn: one connection of the load, driven by the epoll loop.
type lconn struct {
	fd       int
	p        parser
	sent     []int64 // ring of send times
	head     int
	inflight int
	out      []byte // bytes of a write the socket did not take yet
	rest     []byte // bytes the handshake read past the 101
	state    int
	wantOut  bool // EPOLLOUT armed
	res      outcome
}

const (
	stRunning       = iota
	stDraining      // no more sends; waiting for the echoes in flight
	stCloseSent     // our close is out; waiting for the server's close
	stCloseAnswered // the server's close is in; waiting for its EOF
	stDone
)

// takeFD: a dup of the connection's descriptor (non-blocking, as Go left
// it), the net.Conn closed (Go's poller lets go of it first).
func takeFD(c *net.TCPConn) (int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var derr error
	if err := rc.Control(func(f uintptr) { fd, derr = syscall.Dup(int(f)) }); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, derr
	}
	c.Close()
	syscall.CloseOnExec(fd)
	return fd, syscall.SetNonblock(fd, true)
}

type loop struct {
	ep    int
	conns map[int]*lconn
	buf   []byte
}

func (l *loop) arm(c *lconn, out bool) {
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

// send: b after whatever is still waiting; what the socket does not take
// waits for EPOLLOUT. b must stay valid (frames, or a frame of its own).
func (l *loop) send(c *lconn, b []byte) bool {
	if len(c.out) > 0 {
		c.out = append(c.out[:len(c.out):len(c.out)], b...)
		return true
	}
	for len(b) > 0 {
		n, err := syscall.Write(c.fd, b)
		if err == syscall.EAGAIN {
			c.out = b
			l.arm(c, true)
			return true
		}
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			l.fail(c, "write error", err.Error())
			return false
		}
		b = b[n:]
	}
	return true
}

func (l *loop) flush(c *lconn) {
	for len(c.out) > 0 {
		n, err := syscall.Write(c.fd, c.out)
		if err == syscall.EAGAIN {
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

func (l *loop) finish(c *lconn, kind, err string) {
	if c.state == stDone {
		return
	}
	c.res.kind, c.res.err = kind, err
	c.state = stDone
	_ = syscall.EpollCtl(l.ep, syscall.EPOLL_CTL_DEL, c.fd, nil)
	syscall.Close(c.fd)
	delete(l.conns, c.fd)
}

// fail: an ending that is not the closing handshake's.
func (l *loop) fail(c *lconn, kind, err string) {
	switch c.state {
	case stCloseSent, stCloseAnswered:
		kind = "close: " + kind
	}
	l.finish(c, kind, err)
}

func (l *loop) push(c *lconn, k int, now int64) bool {
	w := len(c.sent)
	for i := 0; i < k; i++ {
		c.sent[(c.head+c.inflight)%w] = now
		c.inflight++
	}
	return l.send(c, frames[:k*frameLen])
}

// onData: bytes from the server.
func (l *loop) onData(c *lconn, data []byte, ph int32) {
	p := &c.p
	p.feed(data)
	if p.protoError != "" {
		l.fail(c, "bad echo", p.protoError)
		return
	}
	if p.done > 0 {
		now := nanotime()
		if p.done > c.inflight {
			l.fail(c, "bad echo", "more echoes than messages sent")
			return
		}
		w := len(c.sent)
		for i := 0; i < p.done; i++ {
			if ph == phaseMeasure {
				hist.add(uint64(now-c.sent[c.head]), 1)
			}
			c.head = (c.head + 1) % w
			c.inflight--
		}
		c.res.all += uint64(p.done)
		if ph == phaseMeasure {
			measured.Add(uint64(p.done))
			c.res.got += uint64(p.done)
		}
		if c.state == stRunning && ph != phaseStop {
			if !l.push(c, p.done, now) {
				return
			}
		}
	}
	for _, pong := range p.pongs {
		if !l.send(c, pong) {
			return
		}
	}
	p.pongs = p.pongs[:0]
	if p.closeCode >= 0 {
		switch c.state {
		case stRunning, stDraining:
			l.fail(c, "closed by the server", fmt.Sprintf("close %d during the load", p.closeCode))
			return
		case stCloseSent:
			if p.closeCode != 1000 {
				l.finish(c, "close: answered with another code", strconv.Itoa(p.closeCode))
				return
			}
			c.state = stCloseAnswered
		}
	}
	l.progress(c, ph)
}

// progress: from running to draining to our close, once the phase says so.
func (l *loop) progress(c *lconn, ph int32) {
	if c.state == stRunning && ph == phaseStop {
		c.state = stDraining
	}
	if c.state == stDraining && c.inflight == 0 {
		c.state = stCloseSent
		l.send(c, closeFrame(1000))
	}
}

func (l *loop) onEOF(c *lconn, err error) {
	switch {
	case c.state == stCloseAnswered && err == nil:
		l.finish(c, "clean", "")
	case c.state == stCloseAnswered:
		l.finish(c, "close: answered, then a read error", err.Error())
	case c.state == stCloseSent && err == nil:
		l.finish(c, "close: EOF or error, no close frame", "EOF")
	case c.state == stCloseSent:
		l.finish(c, "close: EOF or error, no close frame", err.Error())
	case err == nil:
		l.finish(c, "closed by the server", "EOF without a close frame during the load")
	default:
		l.finish(c, "read error", err.Error())
	}
}

// deadline: what every connection still open at the end was waiting for.
func (l *loop) deadline(c *lconn) {
	switch c.state {
	case stRunning, stDraining:
		l.finish(c, "stalled", fmt.Sprintf("%d echoes still due at the end", c.inflight))
	case stCloseSent:
		l.finish(c, "close: no answer", "")
	case stCloseAnswered:
		l.finish(c, "close: answered, TCP left open", "")
	}
}

// runLoop: the whole load on this goroutine (one OS thread): starts every
// connection's window, moves the phase at the window's edges (calling edge),
// and returns once every connection is done or the close deadline passed.
func runLoop(all []*lconn, edge func(int32)) {
	runtime.LockOSThread()
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		panic(err)
	}
	l := &loop{ep: ep, conns: map[int]*lconn{}, buf: make([]byte, readBufSize())}
	now := nanotime()
	for _, c := range all {
		if c.state == stDone {
			continue
		}
		l.conns[c.fd] = c
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(c.fd)}
		if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, c.fd, &ev); err != nil {
			l.finish(c, "epoll", err.Error())
			continue
		}
	}
	for _, c := range all {
		if c.state == stDone {
			continue
		}
		if l.push(c, len(c.sent), now) && len(c.rest) > 0 {
			l.onData(c, c.rest, phaseWarmup)
		}
	}
	warmEnd := time.Now().Add(*flagWarmup)
	measureEnd := warmEnd.Add(*flagDuration)
	var closeEnd time.Time
	ph := int32(phaseWarmup)
	events := make([]syscall.EpollEvent, 1024)
	for len(l.conns) > 0 {
		t := time.Now()
		switch {
		case ph == phaseWarmup && !t.Before(warmEnd):
			ph = phaseMeasure
			edge(ph)
		case ph == phaseMeasure && !t.Before(measureEnd):
			ph = phaseStop
			edge(ph)
			closeEnd = time.Now().Add(*flagCloseTime)
			for _, c := range l.conns {
				l.progress(c, ph)
			}
		case ph == phaseStop && !t.Before(closeEnd):
			for _, c := range l.conns {
				l.deadline(c)
			}
			continue
		}
		var next time.Time
		switch ph {
		case phaseWarmup:
			next = warmEnd
		case phaseMeasure:
			next = measureEnd
		default:
			next = closeEnd
		}
		timeout := int(time.Until(next)/time.Millisecond) + 1
		if timeout > 100 {
			timeout = 100
		}
		n, err := syscall.EpollWait(ep, events, timeout)
		if err != nil && err != syscall.EINTR {
			panic(err)
		}
		phase.Store(ph)
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
			k, rerr := syscall.Read(c.fd, l.buf)
			switch {
			case rerr == syscall.EAGAIN || rerr == syscall.EINTR:
			case rerr != nil:
				l.onEOF(c, rerr)
			case k == 0:
				l.onEOF(c, nil)
			default:
				l.onData(c, l.buf[:k], ph)
			}
		}
	}
	syscall.Close(ep)
}

var startTime = time.Now()

func nanotime() int64 { return int64(time.Since(startTime)) }

func procCPU(pid int) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	u, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (u + st) / float64(*flagClkTck)
}

// cpuTicks: per CPU, busy and total jiffies.
func cpuTicks() map[string][2]uint64 {
	out := map[string][2]uint64{}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		var v [8]uint64
		var total uint64
		for i := 0; i < 8; i++ {
			v[i], _ = strconv.ParseUint(f[i+1], 10, 64)
			total += v[i]
		}
		out[f[0][3:]] = [2]uint64{total - v[3] - v[4], total}
	}
	return out
}

func selfCPU() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

type connected struct {
	c    *net.TCPConn
	rest []byte
	head string // the 101's head
}

// connectAll: -conns connections, -dial-parallel at a time; the failures by reason.
func connectAll() ([]connected, map[string]int, string, float64) {
	return connectN(*flagConns, *flagPath, "")
}

// connectN: n connections to path (extra: header lines for the request).
func connectN(n int, path, extra string) ([]connected, map[string]int, string, float64) {
	t0 := time.Now()
	out := make([]connected, n)
	fails := map[string]int{}
	first := ""
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, *flagParallel)
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			c, rest, head, err := dialWS(*flagAddr, path, extra)
			if err != nil {
				mu.Lock()
				k := err.Error()
				if j := strings.Index(k, ": "); j >= 0 {
					k = k[:j]
				}
				fails[k]++
				if first == "" {
					first = err.Error()
				}
				mu.Unlock()
				return
			}
			out[i] = connected{c, rest, head}
		}(i)
	}
	wg.Wait()
	ok := out[:0]
	for _, x := range out {
		if x.c != nil {
			ok = append(ok, x)
		}
	}
	return ok, fails, first, time.Since(t0).Seconds()
}

func emit(v any) {
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
}

func buildPayload(n int) []byte {
	b := make([]byte, n)
	if *flagText {
		const abc = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 "
		for i := range b {
			b[i] = abc[i%len(abc)]
		}
	} else {
		_, _ = rand.Read(b)
	}
	return b
}

func modeLoad() {
	if *flagText {
		opcode = 0x1
	}
	payload = buildPayload(*flagSize)
	one := clientFrame(opcode, payload)
	frameLen = len(one)
	frames = bytes.Repeat(one, *flagWindow)

	conns, fails, firstFail, connectS := connectAll()
	all := make([]*lconn, 0, len(conns))
	for _, x := range conns {
		c := &lconn{fd: -1, p: parser{want: payload, wantOp: opcode, closeCode: -1}, sent: make([]int64, *flagWindow),
			rest: x.rest}
		fd, err := takeFD(x.c)
		if err != nil {
			c.res.kind, c.res.err, c.state = "descriptor", err.Error(), stDone
		}
		c.fd = fd
		all = append(all, c)
	}
	var sc0, sc1, me0, me1 float64
	var ct0, ct1 map[string][2]uint64
	var t0 time.Time
	var wall float64
	var m0, msgs uint64
	runLoop(all, func(ph int32) {
		if ph == phaseMeasure {
			sc0, ct0, me0, t0 = procCPU(*flagServerPID), cpuTicks(), selfCPU(), time.Now()
			m0 = measured.Load()
			return
		}
		wall = time.Since(t0).Seconds()
		sc1, ct1, me1 = procCPU(*flagServerPID), cpuTicks(), selfCPU()
		msgs = measured.Load() - m0
	})
	results := make([]outcome, len(all))
	for i, c := range all {
		results[i] = c.res
		totalRecv.Add(c.res.all)
	}

	kinds := map[string]int{}
	firstErr := map[string]string{}
	idle, never := 0, 0
	for _, r := range results {
		if r.all == 0 {
			never++
		}
		kinds[r.kind]++
		if r.err != "" && firstErr[r.kind] == "" {
			firstErr[r.kind] = r.err
		}
		if r.got == 0 {
			idle++
		}
	}
	qs, n := hist.quantiles([]float64{0.5, 0.9, 0.99, 0.999, 1.0})
	busy := map[string]float64{}
	for cpu, v1 := range ct1 {
		if v0, ok := ct0[cpu]; ok && v1[1] > v0[1] {
			busy[cpu] = float64(v1[0]-v0[0]) * 100 / float64(v1[1]-v0[1])
		}
	}
	out := map[string]any{
		"conns": *flagConns, "connected": len(conns), "connect_failures": fails, "first_connect_failure": firstFail,
		"connect_s": connectS, "window": *flagWindow, "size": *flagSize, "text": *flagText,
		"wall_s": wall, "messages": msgs, "msgs_per_s": float64(msgs) / wall,
		"mib_per_s_each_way": float64(msgs) * float64(*flagSize) / wall / (1 << 20),
		"latency_samples":    n, "p50_us": qs[0] / 1e3, "p90_us": qs[1] / 1e3, "p99_us": qs[2] / 1e3,
		"p999_us": qs[3] / 1e3, "max_us": qs[4] / 1e3,
		"conns_without_echo_in_window": idle, "conns_never_echoed": never, "endings": kinds, "first_error": firstErr,
		"cpu_busy_pct": busy, "load_cpu_s": me1 - me0, "received_total": totalRecv.Load(),
	}
	if *flagServerPID > 0 {
		out["server_cpu_s"] = sc1 - sc0
		out["server_alive"] = sc1 >= 0
		if msgs > 0 && sc1 >= 0 {
			out["server_cpu_us_per_msg"] = (sc1 - sc0) * 1e6 / float64(msgs)
		}
	}
	emit(out)
}

// ---------------------------------------------------------------- hold mode

func modeHold() {
	if *flagText {
		opcode = 0x1
	}
	payload = buildPayload(*flagSize)
	msg := clientFrame(opcode, payload)
	conns, fails, firstFail, connectS := connectAll()
	var echoed, lost atomic.Int64
	var firstLost atomic.Value
	var wg, first sync.WaitGroup
	for _, x := range conns {
		wg.Add(1)
		first.Add(1)
		go func(x connected) {
			defer wg.Done()
			p := &parser{want: payload, wantOp: opcode, closeCode: -1}
			firstDone := false
			finish := func(why string) {
				lost.Add(1)
				firstLost.CompareAndSwap(nil, why)
				if !firstDone {
					first.Done()
				}
			}
			if _, err := x.c.Write(msg); err != nil {
				finish("write: " + err.Error())
				return
			}
			buf := make([]byte, 1024)
			data := x.rest
			for {
				if len(data) > 0 {
					p.feed(data)
					if p.protoError != "" {
						finish("bad echo: " + p.protoError)
						return
					}
					for _, pong := range p.pongs {
						_, _ = x.c.Write(pong)
					}
					p.pongs = p.pongs[:0]
					if p.done > 0 && !firstDone {
						firstDone = true
						echoed.Add(1)
						first.Done()
					}
					if p.closeCode >= 0 {
						finish(fmt.Sprintf("server closed with %d", p.closeCode))
						return
					}
				}
				n, err := x.c.Read(buf)
				data = buf[:n]
				if err != nil && n == 0 {
					finish("read: " + err.Error())
					return
				}
			}
		}(x)
	}
	first.Wait()
	fl, _ := firstLost.Load().(string)
	emit(map[string]any{"event": "holding", "conns": *flagConns, "connected": len(conns), "echoed": echoed.Load(),
		"lost": lost.Load(), "first_lost": fl, "connect_failures": fails, "first_connect_failure": firstFail,
		"connect_s": connectS})
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	eof := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(eof) }()
	select {
	case <-sig:
	case <-eof:
	}
	fl, _ = firstLost.Load().(string)
	emit(map[string]any{"event": "released", "open": int64(len(conns)) - lost.Load(), "lost": lost.Load(), "first_lost": fl})
	os.Exit(0)
}

// ---------------------------------------------------------------- check mode

func modeCheck() {
	c, rest, err := dial(*flagAddr)
	if err != nil {
		fmt.Println("FAILED:", err)
		os.Exit(1)
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	rd := bufio.NewReaderSize(c, 65536)
	data := rest
	buf := make([]byte, 65536)
	for _, text := range []bool{true, false} {
		*flagText = text
		for _, n := range []int{0, 1, 125, 126, 127, 65535, 65536, 200000} {
			op := byte(0x2)
			if text {
				op = 0x1
			}
			pl := buildPayload(n)
			p := &parser{want: pl, wantOp: op, closeCode: -1}
			if _, err := c.Write(clientFrame(op, pl)); err != nil {
				fmt.Println("FAILED: write:", err)
				os.Exit(1)
			}
			for {
				if len(data) > 0 {
					p.feed(data)
					data = nil
					if p.protoError != "" {
						fmt.Printf("FAILED: %s message of %d bytes: %s\n", map[bool]string{true: "text", false: "binary"}[text], n, p.protoError)
						os.Exit(1)
					}
					if p.closeCode >= 0 {
						fmt.Printf("FAILED: server closed with %d\n", p.closeCode)
						os.Exit(1)
					}
					for _, pong := range p.pongs {
						_, _ = c.Write(pong)
					}
					p.pongs = nil
					if p.done > 0 {
						break
					}
				}
				k, err := rd.Read(buf)
				data = buf[:k]
				if err != nil && k == 0 {
					fmt.Println("FAILED: read:", err)
					os.Exit(1)
				}
			}
		}
	}
	_, _ = c.Write(closeFrame(1000))
	p := &parser{closeCode: -1}
	for p.closeCode < 0 {
		k, err := rd.Read(buf)
		p.feed(buf[:k])
		if err != nil {
			break
		}
	}
	fmt.Printf("ok: text and binary messages of 0, 1, 125, 126, 127, 65535, 65536, 200000 bytes echoed with their type; close answered with %d\n", p.closeCode)
}

func main() {
	flag.Parse()
	_, _ = rand.Read(maskKey[:])
	if *flagWindow < 1 || *flagSize < 0 || *flagConns < 1 {
		fmt.Fprintln(os.Stderr, "ws_load: -window >= 1, -size >= 0, -conns >= 1")
		os.Exit(2)
	}
	_ = runtime.GOMAXPROCS(0)
	switch *flagMode {
	case "load":
		modeLoad()
	case "hold":
		modeHold()
	case "check":
		modeCheck()
	case "fanout":
		modeFanout()
	default:
		fmt.Fprintln(os.Stderr, "ws_load: -mode load|hold|check|fanout")
		os.Exit(2)
	}
}
