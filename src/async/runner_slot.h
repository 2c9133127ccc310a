// Runner::Slot: one exchange of the runner's pool, with what the ring keeps
// for it (its task, its route, its coroutine, its streams). Shared by the
// runner's two files: runner.cc (exchanges' life: start, stop, finish,
// answer) and runner_streams.cc (what goes through pipes: Write, Push,
// ReadBody). Not for anyone else.
#ifndef URING_HTTP_SRC_ASYNC_RUNNER_SLOT_H_
#define URING_HTTP_SRC_ASYNC_RUNNER_SLOT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/async/runner.h"

namespace uring_http::async {

struct Runner::Slot : Exchange {
  // (Ordered for size: a slot is held by every open exchange, an open
  // event stream's for hours.)
  Runner* runner = nullptr;
  uint32_t index = 0;
  uint32_t generation = 0;
  Slot* next_free = nullptr;
  worker::TaskBuffer* task = nullptr;
  const router::Route* route = nullptr;
  uint64_t done_user_data = 0;
  Task<> coroutine;
  int64_t deadline_ns = 0;       // 0: none
  uint32_t befores_ran = 0;      // middleware befores run
  bool answered_before = false;  // a middleware's before answered
  bool in_ready = false;
  bool closing = false;          // ended; its stream's end is being written
  bool handler_done = false;     // the coroutine has ended (Finish ran)
  bool push_ended = false;       // the stream's End() has been taken
  bool in_pushing = false;       // in pushing_
  bool in_push_closed = false;
  bool request_in_task = false;  // request_ was made in the task: destroyed at the end
  // A streamed response (the first Write made it), never blocking.
  std::optional<worker::PipeResponseStream> stream;
  // A body written from any thread (Exchange::Push).
  std::shared_ptr<PushStream> push;
  // A whole answer awaited from another thread (Pending::kAnswer).
  std::shared_ptr<DeferredAnswer> answer;
  // A ReadBody waiting for bytes: where they go.
  char* read_buf = nullptr;
  size_t read_len = 0;
  // The request (request_) is parsed into the task's memory, past the
  // bytes the connection copied, when that has room (the connection asks
  // for it: worker::ParsedRequestBytes), so that an open exchange holds no
  // request of its own; else into the spare, made by the first request
  // without room and kept.
  struct Spare {
    http::Request request;
    std::vector<http::Header> headers;
    http::PathParams params;
  };
  std::unique_ptr<Spare> spare;
  // Its path parameters when the task had no room for them (a block of
  // the thread's size classes), or null.
  void* params_block = nullptr;
};

}  // namespace uring_http::async

#endif  // URING_HTTP_SRC_ASYNC_RUNNER_SLOT_H_
