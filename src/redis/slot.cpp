#include "redis/slot.hpp"

#include <array>

namespace rlock::redis {
namespace {

constexpr std::array<uint16_t, 256> make_table() {
  std::array<uint16_t, 256> table{};
  for (int byte = 0; byte < 256; ++byte) {
    uint16_t crc = static_cast<uint16_t>(byte << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = static_cast<uint16_t>(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    table[byte] = crc;
  }
  return table;
}

constexpr std::array<uint16_t, 256> kTable = make_table();

}  // namespace

uint16_t crc16(std::string_view data) {
  uint16_t crc = 0;
  for (char c : data) {
    crc = static_cast<uint16_t>((crc << 8) ^ kTable[((crc >> 8) ^ static_cast<uint8_t>(c)) & 0xff]);
  }
  return crc;
}

int key_slot(std::string_view key) {
  size_t open = key.find('{');
  if (open != std::string_view::npos) {
    size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return crc16(key) & (kSlotCount - 1);
}

}  // namespace rlock::redis
