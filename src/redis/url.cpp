#include "redis/url.hpp"

#include <charconv>

#include "util/error.hpp"

namespace rlock::redis {
namespace {

// Messages never quote the URL or any part of it: a malformed URL may hold a password
// anywhere (`redis://user:S3cret`, `redis:/:S3cret@host`), so they only name the part.
UsageError bad_url(std::string_view why) {
  return UsageError(
      "invalid redis URL: " + std::string(why) +
      " (expected redis://[user[:password]@]host[:port][/db] or unix:///path[?db=N])");
}

int parse_int(std::string_view text, int lo, int hi, std::string_view what) {
  int value = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < lo || value > hi) {
    throw bad_url(std::string(what) + " is not a number from " + std::to_string(lo) + " to " +
                  std::to_string(hi));
  }
  return value;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Userinfo may carry reserved characters percent-encoded (`p%40ss` = `p@ss`).
std::string percent_decode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// `user:password`, `:password` or `user`. A lone word is the ACL user, as RFC 3986 and
// most clients read it (redis-cli alone takes it for a password); its password then comes
// from --password-file, RLOCK_PASSWORD or the config file.
void parse_userinfo(std::string_view info, Endpoint& ep) {
  size_t colon = info.find(':');
  if (colon == std::string_view::npos) {
    ep.user = percent_decode(info);
    return;
  }
  ep.user = percent_decode(info.substr(0, colon));
  ep.password = percent_decode(info.substr(colon + 1));
}

void parse_host_port(std::string_view hp, Endpoint& ep) {
  if (hp.empty()) throw bad_url("empty host");
  if (hp.front() == '[') {  // [::1]:6379
    size_t close = hp.find(']');
    if (close == std::string_view::npos) throw bad_url("unclosed '[' in host");
    ep.host = std::string(hp.substr(1, close - 1));
    hp.remove_prefix(close + 1);
    if (hp.empty()) return;
    if (hp.front() != ':') throw bad_url("unexpected text after ']'");
    ep.port = parse_int(hp.substr(1), 1, 65535, "port");
    return;
  }
  size_t colon = hp.rfind(':');
  if (colon == std::string_view::npos) {
    ep.host = std::string(hp);
    return;
  }
  if (hp.substr(0, colon).find(':') != std::string_view::npos) {
    throw bad_url("an IPv6 host must be in brackets ([::1]:6379)");
  }
  if (colon > 0) ep.host = std::string(hp.substr(0, colon));
  ep.port = parse_int(hp.substr(colon + 1), 1, 65535, "port");
}

Endpoint parse_tcp(std::string_view rest) {
  Endpoint ep;
  // Userinfo ends at the last '@' of the whole URL (host, port and db never hold one), so
  // that a password with an unencoded '/' or '@' is still taken as a password.
  size_t at = rest.rfind('@');
  if (at != std::string_view::npos) {
    parse_userinfo(rest.substr(0, at), ep);
    rest.remove_prefix(at + 1);
  }
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    std::string_view db = rest.substr(slash + 1);
    if (!db.empty()) ep.db = parse_int(db, 0, 1'000'000, "database");
  }
  parse_host_port(authority, ep);
  if (ep.host.empty()) throw bad_url("empty host");
  return ep;
}

Endpoint parse_unix(std::string_view rest) {
  Endpoint ep;
  ep.kind = Endpoint::Kind::kUnix;
  size_t at = rest.find('@');
  if (at != std::string_view::npos && rest.find('/') > at) {
    parse_userinfo(rest.substr(0, at), ep);
    rest.remove_prefix(at + 1);
  }
  size_t q = rest.find('?');
  ep.path = std::string(rest.substr(0, q));
  if (ep.path.empty() || ep.path.front() != '/') {
    throw bad_url("unix socket path must be absolute (unix:///path/to.sock)");
  }
  if (q != std::string_view::npos) {
    std::string_view query = rest.substr(q + 1);
    if (query.substr(0, 3) != "db=") throw bad_url("only ?db=N is understood after a socket path");
    ep.db = parse_int(query.substr(3), 0, 1'000'000, "database");
  }
  return ep;
}

}  // namespace

std::string Endpoint::describe() const {
  std::string out;
  if (kind == Kind::kUnix) {
    out.append("unix:").append(path);
    if (db) out.append("?db=").append(std::to_string(db));
    return out;
  }
  bool ipv6 = host.find(':') != std::string::npos;
  if (ipv6) out.push_back('[');
  out.append(host);
  if (ipv6) out.push_back(']');
  out.append(":").append(std::to_string(port));
  if (db) out.append("/").append(std::to_string(db));
  return out;
}

Endpoint parse_url(std::string_view url) {
  constexpr std::string_view kRedis = "redis://", kUnix = "unix://", kTls = "rediss://";
  if (url.substr(0, kTls.size()) == kTls) {
    throw UnavailableError(
        "rediss:// needs TLS, which this build does not have (hiredis 0.14); reach the server "
        "through a local TLS tunnel (stunnel, spiped) and use redis://");
  }
  if (url.substr(0, kRedis.size()) == kRedis) return parse_tcp(url.substr(kRedis.size()));
  if (url.substr(0, kUnix.size()) == kUnix) return parse_unix(url.substr(kUnix.size()));
  throw bad_url(url.empty() ? "empty" : "unknown scheme");
}

}  // namespace rlock::redis
