// NewTaskBuffer: a task is as large as its request needs (an open stream
// keeps it for the stream's life), and an ASYNC request's parsed form fits
// in the room ParsedRequestBytes asked for, as the runner lays it out.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>

#include "gtest/gtest.h"
#include "src/base/size_class_memory.h"
#include "src/http/parser.h"
#include "src/http/request.h"
#include "src/worker/slow_task.h"

namespace uring_http::worker {
namespace {

TEST(TaskBufferTest, ATaskIsAsLargeAsItsRequestNotAPage) {
  std::thread([] {  // a fresh thread: its size classes start empty
    TaskBuffer* task = NewTaskBuffer(100);
    ASSERT_NE(task, nullptr);
    EXPECT_GE(task->capacity, 100u);
    // Its block is the class of what was asked: under 256 bytes past it.
    EXPECT_LT(sizeof(TaskBuffer) + task->capacity, sizeof(TaskBuffer) + 100 + 256);
    std::memset(task->data(), 'x', task->capacity);  // ASan: all of it is the task's
    EXPECT_EQ(task->state.load(), TaskBuffer::kPending);
    EXPECT_EQ(task->async_exchange, TaskBuffer::kNoExchange);
    DeleteTaskBuffer(task);
    // Warm: the next task of that size comes from the thread's list.
    uint64_t heap = 0;
    void* again = base::SizeClassMemory::Allocate(sizeof(TaskBuffer) + 100, &heap);
    EXPECT_EQ(heap, 0u);
    base::SizeClassMemory::Free(again);
  }).join();
}

TEST(TaskBufferTest, ALargeRequestGetsAllItNeeds) {
  const size_t big = 64 * 1024;
  TaskBuffer* task = NewTaskBuffer(big);
  ASSERT_NE(task, nullptr);
  EXPECT_GE(task->capacity, big);
  std::memset(task->data(), 'y', big);
  DeleteTaskBuffer(task);
}

TEST(TaskBufferTest, AnAsyncRequestFitsTheRoomAskedForItsParsedForm) {
  // As async/runner.cc's PlaceRequest: the Request aligned after the
  // copied bytes, then one Header per field line of the head; the parser
  // takes the head with no more Headers than that.
  for (const std::string_view head :
       {std::string_view("GET / HTTP/1.0\r\n\r\n"),
        std::string_view("GET /events?count=5 HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\n"),
        std::string_view("GET /x HTTP/1.1\nHost: a\n\n")}) {
    size_t lines = 0;
    for (char c : head) lines += c == '\n';
    const size_t fields = lines - 2;  // not the request line, not the blank one
    for (size_t copied_extra = 0; copied_extra < 16; ++copied_extra) {
      const size_t copied = head.size() + copied_extra;  // + a body, the allowed methods
      // The padding to the Request's alignment, exactly, then the rest.
      const size_t pad = (alignof(http::Request) - copied % alignof(http::Request)) %
                         alignof(http::Request);
      EXPECT_EQ(ParsedRequestBytes(head, copied),
                pad + sizeof(http::Request) + fields * sizeof(http::Header))
          << head;
      TaskBuffer* task = NewTaskBuffer(copied + ParsedRequestBytes(head, copied));
      ASSERT_NE(task, nullptr);
      const uintptr_t used = reinterpret_cast<uintptr_t>(task->data()) + copied;
      const uintptr_t end = reinterpret_cast<uintptr_t>(task->data()) + task->capacity;
      const uintptr_t at =
          (used + alignof(http::Request) - 1) & ~uintptr_t{alignof(http::Request) - 1};
      const uintptr_t headers = at + sizeof(http::Request);
      // Within what was asked for, not only within the block's class.
      const uintptr_t asked_end = reinterpret_cast<uintptr_t>(task->data()) + copied +
                                  ParsedRequestBytes(head, copied);
      ASSERT_LE(headers + fields * sizeof(http::Header), asked_end) << head;
      ASSERT_LE(asked_end, end);
      // Parsed with exactly the fields' Headers: complete, nothing refused.
      auto* request = new (reinterpret_cast<void*>(at)) http::Request();
      const http::ParseResult parsed = http::ParseRequestHead(
          head, http::ParseLimits{}, request, reinterpret_cast<http::Header*>(headers), fields);
      EXPECT_EQ(parsed.status, http::ParseStatus::kComplete) << head;
      EXPECT_EQ(request->num_headers, fields) << head;
      request->~Request();
      DeleteTaskBuffer(task);
    }
  }
}

}  // namespace
}  // namespace uring_http::worker
