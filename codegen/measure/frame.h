// The worker protocol's framing: every message between the runner and a worker is
// one frame, an 8-byte header followed by the payload (a serialized protobuf message,
// or nothing):
//
//   byte 0-1  'T' 'G'            (catches stray bytes on the channel)
//   byte 2    protocol version   (kFrameVersion)
//   byte 3    FrameType
//   byte 4-7  payload length, little-endian u32 (at most kMaxFramePayload)
//
// One job is: worker -> kHello once at start-up; runner -> kRequest (MeasureRequest);
// worker -> kCompiled (MeasureResult with compile_ms) when compilation is done, or
// straight kResult on an instantiation/compile error; runner -> kGo when the run
// phase may start (its deadline starts then); worker -> kResult (MeasureResult).
//
// This file has the encoding and the blocking fd I/O the worker uses; the runner's
// side does the same encoding over Boost.Asio (worker_process.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "support/status.h"

namespace tensorgym {

enum class FrameType : uint8_t {
  kHello = 1,     // worker: started and ready; the payload says what it runs under (sandbox.h)
  kRequest = 2,   // runner: MeasureRequest
  kCompiled = 3,  // worker: MeasureResult holding compile_ms (and llvm_ir when asked)
  kGo = 4,        // runner: start the run phase (empty payload)
  kResult = 5,    // worker: the final MeasureResult
};
const char* frame_type_name(FrameType type);

inline constexpr size_t kFrameHeaderBytes = 8;
inline constexpr uint8_t kFrameVersion = 1;
inline constexpr uint32_t kMaxFramePayload = uint32_t(256) << 20;

struct FrameHeader {
  FrameType type = FrameType::kHello;
  uint32_t payload_bytes = 0;
};

struct Frame {
  FrameType type = FrameType::kHello;
  std::string payload;
};

// Header plus payload, ready to write. The payload must fit kMaxFramePayload.
std::string encode_frame(FrameType type, std::string_view payload);
// DATA_LOSS for a bad magic, version or type, or a payload past the cap.
Expected<FrameHeader> decode_frame_header(const unsigned char* header);

// Blocking I/O on a file descriptor (retrying EINTR and short transfers; writes use
// send(MSG_NOSIGNAL) on sockets so a dead peer is an error, not SIGPIPE).
// read_frame: UNAVAILABLE when the stream ends cleanly before a header, DATA_LOSS
// when it ends inside a frame or the frame is malformed.
Status write_frame(int fd, FrameType type, std::string_view payload);
Expected<Frame> read_frame(int fd);

}  // namespace tensorgym
