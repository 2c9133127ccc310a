// The gorilla/websocket peer of perf/compare_ws: an echo on /test/ws.
//
//	gorilla -addr 127.0.0.1:PORT     (perf/compare_ws runs it with GOMAXPROCS=1)
//
// Every text or binary message is written back with its type. One goroutine
// per connection (gorilla's model), default 4 KiB read and write buffers, no
// compression. A message is read through NextReader into a buffer the
// connection keeps (grown to the largest message seen, so no allocation per
// message, unlike ReadMessage) and written with WriteMessage, gorilla's
// no-allocation path that sends one frame with one writev whatever the size
// (a NextWriter would cut a 16 KiB message into 4 KiB frames, a write each).
package main

import (
	"bytes"
	"flag"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/gorilla/websocket"
)

var upgrader = websocket.Upgrader{
	ReadBufferSize:    4096,
	WriteBufferSize:   4096,
	EnableCompression: false,
	CheckOrigin:       func(*http.Request) bool { return true },
}

func echo(w http.ResponseWriter, r *http.Request) {
	c, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade has answered the error
	}
	defer c.Close()
	c.SetReadLimit(64 << 20)
	var msg bytes.Buffer
	for {
		mt, rd, err := c.NextReader()
		if err != nil {
			return
		}
		msg.Reset()
		if _, err := msg.ReadFrom(rd); err != nil {
			return
		}
		if err := c.WriteMessage(mt, msg.Bytes()); err != nil {
			return
		}
	}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	flag.Parse()
	mux := http.NewServeMux()
	mux.HandleFunc("/test/ws", echo)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("gorilla/websocket echo ready on %s/test/ws", ln.Addr())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second}
	log.Fatal(srv.Serve(ln))
}
