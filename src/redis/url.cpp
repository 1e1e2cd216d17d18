#include "redis/url.hpp"

#include <charconv>
#include <vector>

#include "util/error.hpp"

namespace rlock::redis {
namespace {

constexpr std::string_view kStandaloneForms =
    "redis[s]://[user[:password]@]host[:port][/db] or unix:///path[?db=N]";
constexpr std::string_view kSentinelForm =
    "redis-sentinel://[user[:password]@]host[:port][,host[:port]...]/MASTER[?db=N]";
constexpr std::string_view kClusterForm =
    "redis-cluster://[user[:password]@]host[:port][,host[:port]...]";
constexpr std::string_view kQuorumForm =
    "redis-quorum://[user[:password]@]host[:port],host[:port],host[:port][,...][/db] (3, 5, 7 "
    "or 9 members)";

// What is wrong with a URL, thrown by the parts and turned into a UsageError that names
// the form of the URL's scheme. Messages never quote the URL or any part of it: a malformed
// URL may hold a password anywhere (`redis://user:S3cret`, `redis:/:S3cret@host`), so they
// only name the part.
struct Malformed {
  std::string why;
};

Malformed bad_url(std::string_view why) { return Malformed{std::string(why)}; }

UsageError usage_error(const Malformed& m, std::string_view expected) {
  return UsageError("invalid redis URL: " + m.why + " (expected " + std::string(expected) + ")");
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

// `h1[:port],h2[:port]...`: at least one host, none empty.
std::vector<Endpoint> parse_host_list(std::string_view list, int default_port) {
  std::vector<Endpoint> out;
  while (true) {
    size_t comma = list.find(',');
    Endpoint ep;
    ep.port = default_port;
    parse_host_port(list.substr(0, comma), ep);
    if (ep.host.empty()) throw bad_url("empty host");
    out.push_back(std::move(ep));
    if (comma == std::string_view::npos) return out;
    list.remove_prefix(comma + 1);
  }
}

// Splits `[userinfo@]rest` at the last '@' (as parse_tcp does) into `into`'s credentials.
std::string_view take_userinfo(std::string_view url, Endpoint& into) {
  size_t at = url.rfind('@');
  if (at == std::string_view::npos) return url;
  parse_userinfo(url.substr(0, at), into);
  return url.substr(at + 1);
}

// `name=value&...` of a sentinel URL. Names and values are never quoted in messages: a
// mistyped name may be a password pasted in the wrong place.
void parse_sentinel_query(std::string_view query, Target& t) {
  bool seen_db = false, seen_user = false, seen_password = false;
  while (true) {
    size_t amp = query.find('&');
    std::string_view param = query.substr(0, amp);
    size_t eq = param.find('=');
    if (eq == std::string_view::npos) throw bad_url("a URL parameter without '='");
    std::string_view name = param.substr(0, eq), value = param.substr(eq + 1);
    auto once = [](bool& seen) {
      if (seen) throw bad_url("a URL parameter given twice");
      seen = true;
    };
    if (name == "db") {
      once(seen_db);
      t.endpoint.db = parse_int(value, 0, 1'000'000, "database");
    } else if (name == "sentinel_user") {
      once(seen_user);
      t.sentinel_user = percent_decode(value);
    } else if (name == "sentinel_password") {
      once(seen_password);
      t.sentinel_password = percent_decode(value);
    } else {
      throw bad_url("unknown URL parameter (known: db, sentinel_user, sentinel_password)");
    }
    if (amp == std::string_view::npos) return;
    query.remove_prefix(amp + 1);
  }
}

Target parse_sentinel(std::string_view rest) {
  Target t;
  t.kind = Deployment::kSentinel;
  rest = take_userinfo(rest, t.endpoint);
  size_t slash = rest.find('/');
  if (slash == std::string_view::npos) throw bad_url("no /MASTER name after the sentinels");
  t.seeds = parse_host_list(rest.substr(0, slash), 26379);
  rest.remove_prefix(slash + 1);
  size_t q = rest.find('?');
  t.master_name = percent_decode(rest.substr(0, q));
  if (t.master_name.empty()) throw bad_url("empty master name");
  for (char c : t.master_name) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == '/' || c == '@')
      throw bad_url("master name with a control character, '/' or '@'");
  }
  if (q != std::string_view::npos) parse_sentinel_query(rest.substr(q + 1), t);
  return t;
}

Target parse_cluster(std::string_view rest) {
  Target t;
  t.kind = Deployment::kCluster;
  rest = take_userinfo(rest, t.endpoint);
  size_t end = rest.find_first_of("/?");
  t.seeds = parse_host_list(rest.substr(0, end), 6379);
  if (end != std::string_view::npos) {
    std::string_view tail = rest.substr(end);
    if (tail.front() == '?') throw bad_url("a cluster URL takes no parameters");
    if (tail != "/" && tail != "/0") throw bad_url("a cluster has database 0 only");
  }
  return t;
}

// N independent masters: an odd number from 3 to 9 (a majority of an even number tolerates
// no more failures than of the odd number below it), each named once.
Target parse_quorum(std::string_view rest) {
  Target t;
  t.kind = Deployment::kQuorum;
  rest = take_userinfo(rest, t.endpoint);
  size_t end = rest.find_first_of("/?");
  t.seeds = parse_host_list(rest.substr(0, end), 6379);
  if (end != std::string_view::npos) {
    std::string_view tail = rest.substr(end);
    if (tail.front() == '?') throw bad_url("a quorum URL takes no parameters");
    if (tail.size() > 1) t.endpoint.db = parse_int(tail.substr(1), 0, 1'000'000, "database");
  }
  size_t n = t.seeds.size();
  if (n < 3 || n > 9 || n % 2 == 0) {
    throw bad_url("a quorum has an odd number of members from 3 to 9, not " + std::to_string(n));
  }
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (t.seeds[i].host == t.seeds[j].host && t.seeds[i].port == t.seeds[j].port)
        throw bad_url("member " + t.seeds[i].describe() + " is named twice");
    }
  }
  return t;
}

// redis://, rediss:// (the same over TLS) or unix://.
Endpoint parse_standalone(std::string_view url) {
  constexpr std::string_view kRedis = "redis://", kUnix = "unix://", kTls = "rediss://";
  if (url.substr(0, kTls.size()) == kTls) return parse_tcp(url.substr(kTls.size()));
  if (url.substr(0, kRedis.size()) == kRedis) return parse_tcp(url.substr(kRedis.size()));
  if (url.substr(0, kUnix.size()) == kUnix) return parse_unix(url.substr(kUnix.size()));
  throw bad_url(url.empty() ? "empty" : "unknown scheme");
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
  try {
    return parse_standalone(url);
  } catch (const Malformed& m) {
    throw usage_error(m, kStandaloneForms);
  }
}

Endpoint Endpoint::at(std::string tcp_host, int tcp_port) const {
  Endpoint ep = *this;
  ep.kind = Kind::kTcp;
  ep.host = std::move(tcp_host);
  ep.port = tcp_port;
  ep.path.clear();
  return ep;
}

std::string Target::describe() const {
  if (kind == Deployment::kStandalone) return endpoint.describe();
  std::string out = tls ? "rediss" : "redis";
  out += kind == Deployment::kSentinel ? "-sentinel://"
         : kind == Deployment::kQuorum ? "-quorum://"
                                       : "-cluster://";
  for (size_t i = 0; i < seeds.size(); ++i) {
    if (i) out.push_back(',');
    out.append(seeds[i].describe());
  }
  if (kind == Deployment::kQuorum && endpoint.db)
    out.append("/").append(std::to_string(endpoint.db));
  if (kind == Deployment::kSentinel) {
    out.append("/").append(master_name);
    if (endpoint.db) out.append("?db=").append(std::to_string(endpoint.db));
  }
  return out;
}

Target parse_target(std::string_view url) {
  // rediss: the same forms over TLS (every connection: sentinels and data nodes alike).
  bool tls = url.substr(0, 6) == "rediss";
  std::string_view rest = tls ? url.substr(6) : url.substr(0, 5) == "redis" ? url.substr(5) : "";
  auto starts = [rest](std::string_view scheme) { return rest.substr(0, scheme.size()) == scheme; };
  constexpr std::string_view kSentinel = "-sentinel://", kCluster = "-cluster://",
                             kQuorum = "-quorum://";
  std::string_view expected = kStandaloneForms;
  try {
    Target t;
    if (starts(kSentinel)) {
      expected = kSentinelForm;
      t = parse_sentinel(rest.substr(kSentinel.size()));
    } else if (starts(kCluster)) {
      expected = kClusterForm;
      t = parse_cluster(rest.substr(kCluster.size()));
    } else if (starts(kQuorum)) {
      expected = kQuorumForm;
      t = parse_quorum(rest.substr(kQuorum.size()));
    } else {
      t.endpoint = parse_standalone(url);
    }
    t.tls = tls;
    return t;
  } catch (const Malformed& m) {
    // An unknown scheme may be a mistyped sentinel or cluster URL: name every form.
    bool known = starts(kSentinel) || starts(kCluster) || starts(kQuorum) || starts("://") ||
                 url.substr(0, 7) == "unix://";
    if (!known) {
      throw usage_error(
          m, std::string(kStandaloneForms) + ", " + std::string(kSentinelForm) + ", " +
                 std::string(kClusterForm) + " or " + std::string(kQuorumForm) +
                 "; rediss-sentinel://, rediss-cluster:// and rediss-quorum:// over TLS");
    }
    throw usage_error(m, expected);
  }
}

}  // namespace rlock::redis
