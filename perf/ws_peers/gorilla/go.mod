module uring_http/perf/ws_peers/gorilla

go 1.21

require github.com/gorilla/websocket v1.5.3
