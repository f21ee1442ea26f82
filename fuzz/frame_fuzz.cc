// The worker frame reader (codegen/measure/frame.h): the bytes a worker or the runner
// receives, through a socket pair, as read_frame sees them. Each frame read is encoded
// again and must give back the bytes it came from.
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "codegen/measure/frame.h"

namespace tg = tensorgym;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The header decoder alone, on the first bytes.
  if (size >= tg::kFrameHeaderBytes) {
    tg::Expected<tg::FrameHeader> header = tg::decode_frame_header(data);
    if (header.ok() && header->payload_bytes > tg::kMaxFramePayload) std::abort();
  }

  // The stream reader: the input is what the peer wrote, then it closed its end.
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) std::abort();
  // A writer thread, so that inputs larger than the socket buffer do not block.
  std::thread writer([&] {
    size_t done = 0;
    while (done < size) {
      const ssize_t w = ::send(fds[1], data + done, size - done, MSG_NOSIGNAL);
      if (w <= 0) break;  // the reader stopped reading: the rest does not matter
      done += size_t(w);
    }
    ::shutdown(fds[1], SHUT_WR);
  });
  size_t consumed = 0;
  for (;;) {
    tg::Expected<tg::Frame> frame = tg::read_frame(fds[0]);
    if (!frame.ok()) break;
    const std::string again = tg::encode_frame(frame->type, frame->payload);
    if (consumed + again.size() > size || std::memcmp(again.data(), data + consumed, again.size()) != 0) std::abort();
    consumed += again.size();
  }
  ::close(fds[0]);  // unblocks a writer still sending
  writer.join();
  ::close(fds[1]);
  return 0;
}
