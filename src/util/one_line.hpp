#pragma once

#include <string>
#include <string_view>

namespace rlock {

// `text` made safe to print as one line on a terminal or in a log: C0 and C1 control
// characters, DEL, U+2028/U+2029 and bytes that are not UTF-8 become visible escapes
// (`\n`, `\r`, `\t`, `\x1b`, `\u2028`), so that hostile owner ids, names or server
// error texts can neither start a new line nor send terminal escapes. Printable UTF-8
// (and backslashes) pass unchanged.
std::string one_line(std::string_view text);

// Writes "rlock: " + one_line(message) + "\n" to stderr in one write: the only way rlock
// prints a diagnostic.
void print_diagnostic(std::string_view message);

}  // namespace rlock
