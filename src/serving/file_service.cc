#include "src/serving/file_service.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"

namespace uring_http::serving {
namespace {

// Read-only, beneath the root: RESOLVE_BENEATH refuses "..", absolute paths
// and symbolic links that would leave the directory (EXDEV), and
// RESOLVE_NO_MAGICLINKS /proc-style links (ELOOP), so the kernel, not only
// our path checks, keeps every open inside the root. No O_CLOEXEC: a direct
// descriptor has no fd to inherit, and openat2 refuses the flag with one.
// The kernel copies this at submission; it is shared by every open.
const open_how kOpenHow = {
    .flags = O_RDONLY | O_NOCTTY,
    .mode = 0,
    .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
};
// A path opened only to prove it lies beneath the root (the statx before
// it follows symbolic links anywhere): O_PATH needs no read permission,
// touches nothing, and never blocks (on a FIFO, say).
const open_how kCheckHow = {
    .flags = O_PATH,
    .mode = 0,
    .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
};

}  // namespace

absl::Status FileService::Init(io::Ring* ring, const FileServiceConfig& config,
                               uint64_t close_user_data) {
  ring_ = ring;
  close_user_data_ = close_user_data;
  const size_t bytes = size_t{config.buffer_count} * config.buffer_size;
  auto arena = io::Arena::Create(bytes + 4096);
  if (!arena.ok()) return arena.status();
  arena_ = *std::move(arena);
  if (absl::Status s = buffers_.Init(arena_, config.buffer_size, config.buffer_count); !s.ok()) {
    return s;
  }
  // One fixed buffer spanning them all: READ_FIXED takes any address range
  // inside it (buf_index 0). Registering pins the pages, so they are
  // resident from now on: the count bounds it.
  iovec region{buffers_.base(), buffers_.bytes()};
  fixed_buffers_ = io_uring_register_buffers(ring->raw(), &region, 1) == 0;
  cache_.emplace(this, config.cache);
  pipe_bytes_ = config.pipe_bytes;
  max_pipes_ = config.max_pipes;
  return absl::OkStatus();
}

FileService::~FileService() {
  for (const auto& p : free_pipes_) {
    close(p.read_fd);
    close(p.write_fd);
  }
}

bool FileService::AcquirePipe(conn::Transport::Pipe* pipe) {
  if (!free_pipes_.empty()) {
    *pipe = free_pipes_.back();
    free_pipes_.pop_back();
    ++pipes_out_;
    return true;
  }
  if (pipes_out_ >= max_pipes_) return false;
  int fds[2];
  // Not O_NONBLOCK: the pipe is only ever filled when empty and drained
  // by what was put in, so no splice waits on it. (A full socket is
  // SPLICE_F_NONBLOCK's and the socket's O_NONBLOCK's to report.)
  if (pipe2(fds, O_CLOEXEC) != 0) return false;  // EMFILE: read instead
  const int size = fcntl(fds[1], F_SETPIPE_SZ, static_cast<int>(pipe_bytes_));
  pipe->read_fd = fds[0];
  pipe->write_fd = fds[1];
  pipe->capacity = static_cast<uint32_t>(size > 0 ? size : fcntl(fds[1], F_GETPIPE_SZ));
  ++pipes_out_;
  return true;
}

void FileService::ReleasePipe(const conn::Transport::Pipe& pipe, bool empty) {
  --pipes_out_;
  if (empty) {
    free_pipes_.push_back(pipe);
    return;
  }
  // Bytes of an abandoned body are still in it: it cannot serve another.
  close(pipe.read_fd);
  close(pipe.write_fd);
}

void FileService::PrepSpliceToPipe(int file_index, uint64_t offset, int pipe_write, uint32_t len,
                                   uint64_t user_data) {
  io_uring_sqe* sqe = ring_->GetSqe();
  // io_uring always runs a splice on its io-wq (it has no non-blocking
  // attempt): a cold page cache blocks a kernel worker, not this thread.
  // The input is our direct descriptor (SPLICE_F_FD_IN_FIXED).
  io_uring_prep_splice(sqe, file_index, static_cast<int64_t>(offset), pipe_write, -1, len,
                       SPLICE_F_FD_IN_FIXED);
  io_uring_sqe_set_data64(sqe, user_data);
}

void FileService::PrepSpliceToSocket(int pipe_read, uint32_t socket_index, uint32_t len,
                                     bool more, uint64_t user_data) {
  io_uring_sqe* sqe = ring_->GetSqe();
  // The socket (the output, sqe->fd) is a direct descriptor: IOSQE_FIXED_FILE.
  // It was accepted O_NONBLOCK, so a full socket is -EAGAIN (then a poll),
  // never a kernel worker parked on a slow reader.
  io_uring_prep_splice(sqe, pipe_read, -1, static_cast<int>(socket_index), -1, len,
                       SPLICE_F_NONBLOCK | (more ? SPLICE_F_MORE : 0));
  sqe->flags |= IOSQE_FIXED_FILE;
  io_uring_sqe_set_data64(sqe, user_data);
}

void FileService::PrepPollWritable(uint32_t socket_index, uint64_t user_data) {
  io_uring_sqe* sqe = ring_->GetSqe();
  io_uring_prep_poll_add(sqe, static_cast<int>(socket_index), POLLOUT);
  sqe->flags |= IOSQE_FIXED_FILE;
  io_uring_sqe_set_data64(sqe, user_data);
}

void FileService::PrepStat(int dir_fd, const char* path, struct statx* out, uint64_t user_data) {
  io_uring_sqe* sqe = ring_->GetSqe();
  // Follows a final symbolic link, as the open will: the two describe the
  // same file (the open then refuses it if the link leaves the root).
  io_uring_prep_statx(sqe, dir_fd, path, 0,
                      STATX_TYPE | STATX_MODE | STATX_SIZE | STATX_MTIME | STATX_CTIME | STATX_INO,
                      out);
  io_uring_sqe_set_data64(sqe, user_data);
}

void FileService::PrepOpen(int dir_fd, const char* path, bool check_only, uint64_t user_data) {
  io_uring_sqe* sqe = ring_->GetSqe();
  io_uring_prep_openat2(sqe, dir_fd, path,
                        const_cast<open_how*>(check_only ? &kCheckHow : &kOpenHow));
  // Not io_uring_prep_openat2_direct(..., IORING_FILE_INDEX_ALLOC): liburing
  // 2.3 adds one to the index, which turns ALLOC into slot 0.
  sqe->file_index = IORING_FILE_INDEX_ALLOC;
  io_uring_sqe_set_data64(sqe, user_data);
}

void FileService::PrepRead(int file_index, char* buf, uint32_t len, uint64_t offset,
                           uint64_t user_data) {
  io_uring_sqe* sqe = ring_->GetSqe();
  // Buffered reads of a warm page cache complete inline; a cold one is
  // punted to the kernel's io-wq workers, never blocking this thread.
  const bool fixed = fixed_buffers_ && buf >= buffers_.base() &&
                     buf + len <= buffers_.base() + buffers_.bytes();
  if (fixed) {
    io_uring_prep_read_fixed(sqe, file_index, buf, len, offset, 0);
  } else {
    io_uring_prep_read(sqe, file_index, buf, len, offset);
  }
  sqe->flags |= IOSQE_FIXED_FILE;
  io_uring_sqe_set_data64(sqe, user_data);
}

void FileService::CloseFile(int file_index) {
  if (ring_ == nullptr) return;
  io_uring_sqe* sqe = ring_->GetSqe();
  io_uring_prep_close_direct(sqe, static_cast<unsigned>(file_index));
  io_uring_sqe_set_data64(sqe, close_user_data_);
}

}  // namespace uring_http::serving
