#pragma once

#include <cstddef>
#include <string_view>

namespace rlock {

// Length (1 to 4) of the well-formed UTF-8 sequence at text[i], or 0 when there is none: a
// stray continuation byte, a sequence cut short, an overlong form, a surrogate, a code
// point above U+10FFFF. Its code point goes to *code_point when that is given. The one
// decoder behind names' validation, one-line diagnostics and Prometheus labels.
size_t utf8_length(std::string_view text, size_t i, unsigned* code_point = nullptr);

// Offset of the first byte that is not part of valid UTF-8, or npos when all of it is.
size_t invalid_utf8_at(std::string_view text);

}  // namespace rlock
