#pragma once

#include <string_view>

namespace rlock {

inline constexpr size_t kMaxNameBytes = 512;

// Checks an object name: non-empty, at most 512 bytes, valid UTF-8, no control characters.
// Throws UsageError saying which rule it breaks. Names and owners are printed in JSON and
// on terminals, so bytes that are not text are refused up front rather than mangled later.
void validate_name(std::string_view name);

// The same rules for an owner id (`--owner`, RLOCK_OWNER, the config file).
void validate_owner(std::string_view owner);

// The same rules for a participant id (`latch count-down --id`).
void validate_participant_id(std::string_view id);

// The same rules for a rate limiter's client id (`limit --client`).
void validate_client_id(std::string_view id);

inline constexpr size_t kMaxNoteBytes = 200;

// Checks a hold's note (`--note`): non-empty, at most 200 bytes, valid UTF-8, no control
// characters (C0, DEL, nor C1 U+0080-U+009F): it is shown by inspect on one line.
void validate_note(std::string_view note);

}  // namespace rlock
