// The worker's ends of a SLOW task's streams (see slow_task.h):
//
// PipeBodyReader is what Request::ReadBody() reads a streamed request body
// from: it blocks on the task's request pipe until the ring has fed bytes.
// When the ring aborts the pipe (the body failed, or the connection ended)
// a read returns -1 and error() gives the ring's reason (http::BodyError).
//
// PipeResponseStream is what Response::Write() streams through: the first
// write fixes the head (status, fields, a promised length) in the task's
// StreamHead and creates the response pipe (unless the request body has
// failed: the server answers that one); every write adds its body bytes,
// blocking while the pipe is full; Finish() leaves the trailers and ends the
// body when the handler returns. The ring frames all of it for its protocol.
//
// A compressible streamed response is gzipped here, on the worker, as it
// streams (see compress.h): one GzipStream per response, flushed after each
// Write so that each piece reaches the client decodable, and released when
// the response ends.
//
// Both tell the ring of their progress only when it asked (BodyPipe's
// ArmReadNotify/ArmWriteNotify), with a kStreamNotify message.
//
// A PipeResponseStream may also be non-blocking (Mode::kStaging): for a
// writer that must never wait, the ring thread's ASYNC handlers
// (src/async/runner.h). What does not fit in the pipe is staged in the
// stream, and Flush() moves it on when there is room; its owner waits for
// staged() to empty before it writes more (that is its backpressure) and
// before Close(). Its messages to the ring go through `notify`, which the
// ring thread can deliver without a syscall.
//
// Thread-safety: the worker running the task.
#ifndef URING_HTTP_SRC_WORKER_TASK_STREAMS_H_
#define URING_HTTP_SRC_WORKER_TASK_STREAMS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "src/exchange/run_handler.h"
#include "src/http/compress.h"
#include "src/http/gzip_encoder.h"
#include "src/http/request.h"
#include "src/http/response.h"
#include "src/worker/slow_task.h"

namespace uring_http::worker {

// The bound on a streamed response's unsent bytes, per connection.
inline constexpr size_t kResponsePipeBytes = 256 * 1024;

class PipeBodyReader final : public http::BodyReader {
 public:
  explicit PipeBodyReader(TaskBuffer* task) : task_(task) {}
  long Read(char* buf, size_t len) override;
  http::BodyError error() const override { return error_; }

 private:
  long Fail();

  TaskBuffer* task_;
  http::BodyError error_ = http::BodyError::kNone;
};

class PipeResponseStream final : public http::ResponseStream, public exchange::StreamedHead {
 public:
  enum class Mode : uint8_t {
    kBlocking,  // a worker: Write waits for room
    kStaging,   // never waits: the rest is staged (see the top)
  };
  // How the ring hears of progress (kStreamNotify): PostToRing by default.
  using NotifyFn = void (*)(TaskBuffer* task, void* arg);

  // `compression` is kept by reference: the worker's or runner's options,
  // which outlive every stream.
  explicit PipeResponseStream(TaskBuffer* task, const http::CompressionOptions& compression,
                              bool gzip_accepted = false, Mode mode = Mode::kBlocking,
                              NotifyFn notify = nullptr, void* notify_arg = nullptr,
                              size_t pipe_bytes = 0)
      : task_(task),
        compression_(compression),
        notify_(notify),
        notify_arg_(notify_arg),
        pipe_bytes_(static_cast<uint32_t>(pipe_bytes != 0 ? pipe_bytes : kResponsePipeBytes)),
        gzip_accepted_(gzip_accepted),
        mode_(mode) {}
  PipeResponseStream(const PipeResponseStream&) = delete;
  PipeResponseStream& operator=(const PipeResponseStream&) = delete;

  bool Write(http::Response& response, std::string_view data) override;
  // Runs a producer the handler set (Response::Stream) until it is done or
  // the client is gone.
  void RunProducer(http::Response& response);
  // After the handler: the rest of the body and its end. Only if started().
  // (kStaging: FinishBody, then Close once staged() is empty.)
  void Finish(http::Response& response) {
    FinishBody(response);
    Close();
  }
  // The rest of the body (whatever body() holds, the gzip trailer) and the
  // trailers, without ending the pipe.
  void FinishBody(http::Response& response);
  // Ends the body in the pipe (its last bytes must be in it).
  void Close();
  // ---- kStaging
  // Bytes written but not yet in the pipe.
  size_t staged() const { return staged_ != nullptr ? staged_->size() - staged_sent_ : 0; }
  // Bytes written that the ring has not sent yet (staged, and in the pipe).
  size_t unsent() const { return staged() + (pipe_ != nullptr ? pipe_->readable() : 0); }
  // Moves staged bytes into the pipe as far as it has room; true when none
  // are left (or the pipe was aborted: they never will be).
  bool Flush();
  // The ring has stopped reading (the client left): nothing more goes.
  bool aborted() const { return pipe_ != nullptr && pipe_->aborted(); }
  // The handler failed after the head went out.
  void Break() override;
  bool started() const override { return pipe_ != nullptr; }

 private:
  // The streamed request body failed: no response of the handler's starts
  // any more (the ring answers 400, 408 or 413 itself).
  bool RequestBodyFailed() const {
    return task_->request_body != nullptr && task_->request_body->aborted();
  }
  bool Start(http::Response& response);
  // Decides on gzip and adds its headers, before the head is serialized;
  // true when the response says Content-Encoding: gzip.
  bool StartGzip(http::Response& response);
  // Body bytes (not empty) into the pipe.
  bool PutBody(std::string_view data) { return data.empty() || Put(data); }
  // Puts bytes into the pipe, waiting for room; false once aborted.
  bool Put(std::string_view bytes);

  void Notify();

  // Compressing this response's body: the compressor and its output for
  // one Write (reused), made only for a gzipped response (an open ASYNC
  // stream keeps its PipeResponseStream, so what most streams never use
  // is not part of it).
  struct Gzip {
    explicit Gzip(int level) : stream(level) {}
    http::GzipStream stream;
    std::string out;
  };

  TaskBuffer* task_;
  const http::CompressionOptions& compression_;
  const NotifyFn notify_;
  void* const notify_arg_;
  const uint32_t pipe_bytes_;
  const bool gzip_accepted_;
  const Mode mode_;
  bool length_known_ = false;  // the body keeps a promised Content-Length
  bool discard_body_ = false;  // HEAD, 204, 304: the head only
  bool broken_ = false;
  // kStaging: what the pipe had no room for (made by the first write that
  // found it full: most streams never need it).
  std::unique_ptr<std::string> staged_;
  size_t staged_sent_ = 0;  // ... of which this much has gone into it
  std::unique_ptr<Gzip> gzip_;
  BodyPipe* pipe_ = nullptr;  // owned by the ring once published
  uint64_t length_ = 0;        // length_known_: what was promised
  uint64_t written_ = 0;       // body bytes written
};

}  // namespace uring_http::worker

#endif  // URING_HTTP_SRC_WORKER_TASK_STREAMS_H_
