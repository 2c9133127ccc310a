module uring_http/perf/ws_load

go 1.21
