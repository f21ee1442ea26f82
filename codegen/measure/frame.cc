#include "codegen/measure/frame.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace tensorgym {
namespace {

// Writes everything; send() first so sockets never raise SIGPIPE, write() for pipes.
Status write_all(int fd, const char* data, size_t n) {
  bool use_send = true;
  while (n > 0) {
    ssize_t w = use_send ? ::send(fd, data, n, MSG_NOSIGNAL) : ::write(fd, data, n);
    if (w < 0 && errno == ENOTSOCK && use_send) {
      use_send = false;
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      return Status(StatusCode::kUnavailable, std::string("write to the peer failed: ") + std::strerror(errno));
    data += w;
    n -= size_t(w);
  }
  return Status();
}

// Reads exactly n bytes; returns the bytes read before end of stream (< n at EOF).
Expected<size_t> read_all(int fd, char* data, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::read(fd, data + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0)
      return Status(StatusCode::kUnavailable, std::string("read from the peer failed: ") + std::strerror(errno));
    if (r == 0) break;
    got += size_t(r);
  }
  return got;
}

}  // namespace

const char* frame_type_name(FrameType type) {
  switch (type) {
    case FrameType::kHello: return "hello";
    case FrameType::kRequest: return "request";
    case FrameType::kCompiled: return "compiled";
    case FrameType::kGo: return "go";
    case FrameType::kResult: return "result";
  }
  return "unknown";
}

std::string encode_frame(FrameType type, std::string_view payload) {
  std::string out(kFrameHeaderBytes + payload.size(), '\0');
  const uint32_t n = uint32_t(payload.size());
  out[0] = 'T';
  out[1] = 'G';
  out[2] = char(kFrameVersion);
  out[3] = char(type);
  for (int i = 0; i < 4; ++i) out[size_t(4 + i)] = char((n >> (8 * i)) & 0xff);
  std::memcpy(out.data() + kFrameHeaderBytes, payload.data(), payload.size());
  return out;
}

Expected<FrameHeader> decode_frame_header(const unsigned char* h) {
  if (h[0] != 'T' || h[1] != 'G')
    return Status(StatusCode::kDataLoss, "bad frame magic (not a TensorGym worker stream)");
  if (h[2] != kFrameVersion) {
    return Status(StatusCode::kDataLoss,
                  fmt::format("frame protocol version {}, expected {}", int(h[2]), int(kFrameVersion)));
  }
  if (h[3] < uint8_t(FrameType::kHello) || h[3] > uint8_t(FrameType::kResult)) {
    return Status(StatusCode::kDataLoss, fmt::format("unknown frame type {}", int(h[3])));
  }
  FrameHeader header;
  header.type = FrameType(h[3]);
  header.payload_bytes = uint32_t(h[4]) | uint32_t(h[5]) << 8 | uint32_t(h[6]) << 16 | uint32_t(h[7]) << 24;
  if (header.payload_bytes > kMaxFramePayload) {
    return Status(StatusCode::kDataLoss, fmt::format("frame of {} bytes exceeds the cap of {}", header.payload_bytes,
                                                     kMaxFramePayload));
  }
  return header;
}

Status write_frame(int fd, FrameType type, std::string_view payload) {
  if (payload.size() > kMaxFramePayload) {
    return resource_exhausted(fmt::format("frame payload of {} bytes exceeds the cap", payload.size()));
  }
  const std::string bytes = encode_frame(type, payload);
  return write_all(fd, bytes.data(), bytes.size());
}

Expected<Frame> read_frame(int fd) {
  unsigned char h[kFrameHeaderBytes];
  TG_ASSIGN_OR_RETURN(size_t got, read_all(fd, reinterpret_cast<char*>(h), sizeof h));
  if (got == 0) return Status(StatusCode::kUnavailable, "end of stream");
  if (got < sizeof h) return Status(StatusCode::kDataLoss, "stream ended inside a frame header");
  TG_ASSIGN_OR_RETURN(FrameHeader header, decode_frame_header(h));
  Frame frame;
  frame.type = header.type;
  // The payload grows as its bytes arrive, a chunk at a time: a header that claims
  // more than the peer sends costs what was sent, not the claim (up to 256 MiB).
  constexpr size_t kChunkBytes = size_t(1) << 20;
  while (frame.payload.size() < header.payload_bytes) {
    const size_t at = frame.payload.size();
    const size_t want = std::min<size_t>(kChunkBytes, header.payload_bytes - at);
    frame.payload.resize(at + want);
    TG_ASSIGN_OR_RETURN(size_t got, read_all(fd, frame.payload.data() + at, want));
    if (got < want) return Status(StatusCode::kDataLoss, "stream ended inside a frame");
  }
  return frame;
}

}  // namespace tensorgym
