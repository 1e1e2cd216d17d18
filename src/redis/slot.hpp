#pragma once

#include <cstdint>
#include <string_view>

namespace rlock::redis {

// Number of hash slots of a Redis Cluster.
inline constexpr int kSlotCount = 16384;

// CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0, no reflection), the checksum
// Redis Cluster hashes keys with. crc16("123456789") == 0x31C3.
uint16_t crc16(std::string_view data);

// The cluster slot of `key`, as the server computes it (CLUSTER KEYSLOT): the CRC16 of its
// hash tag, the text between the first `{` and the first `}` after it, when that text is
// not empty; otherwise the CRC16 of the whole key. 0 to kSlotCount - 1.
int key_slot(std::string_view key);

}  // namespace rlock::redis
