#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/console.hpp"
#include "doctor/doctor.hpp"
#include "util/one_line.hpp"

namespace rlock::cli {
namespace {

std::string table(const std::vector<doctor::Finding>& findings) {
  std::string out = "LEVEL    SERVER                 CHECK        DETAIL\n";
  auto cell = [](std::string text, size_t width) {
    text = one_line(text);
    return text + std::string(text.size() < width ? width - text.size() : 2, ' ');
  };
  for (const auto& f : findings) {
    out += cell(std::string(doctor::level_name(f.level)), 9) + cell(f.server, 23) +
           cell(f.check, 13) + one_line(f.detail) + "\n";
  }
  return out;
}

}  // namespace

Runner define_doctor_command(CLI::App& app, std::vector<std::string>& /*command_after_dashes*/) {
  app.footer(R"(Checks, with read-only commands, whether the Redis deployment --url names is fit for
locks, on every master once: server version, persistence (and what a restart does to held
locks), a maxmemory-policy that can evict lock keys, a server timeout that closes idle
connections, round-trip latency, the server clock's offset from this host's, replication
(each replica's lag; warn past 1s), min-replicas-to-write (0: a master cut off from its
replicas keeps accepting holds that a failover then loses), the days left on a TLS
server certificate (warn under 30), a cluster's state, slot coverage and sharded pub/sub,
each sentinel and their quorum (SENTINEL CKQUORUM), and the ACL rights of rlock(1) that
this user lacks (ACL DRYRUN). Prints {"ok":BOOL,"findings":[{"server",
"check","level","detail"}]}; level is ok, warn (worth knowing), fail (can break locks) or
unknown (this user may not read it). Exits 0 when no finding is fail, 1 when one is, 69
when a master cannot be reached (on a quorum, a member that does not answer is a fail).

Examples:
  rlock doctor
  rlock --url redis-sentinel://s1:26379,s2:26379/mymaster doctor --format table)");
  return {[](const Settings& settings) {
    Console console(settings);
    redis::Topology topology = open_topology(settings);
    std::vector<doctor::Finding> findings = doctor::examine(topology, settings.prefix);
    bool ok = true;
    Json list = Json::array();
    for (const auto& f : findings) {
      ok = ok && f.level != doctor::Level::kFail;
      list.push_back({{"server", f.server},
                      {"check", f.check},
                      {"level", std::string(doctor::level_name(f.level))},
                      {"detail", f.detail}});
    }
    if (settings.format == Format::kTable) {
      console.result_text(table(findings));
    } else {
      console.result({{"ok", ok}, {"findings", list}});
    }
    return ok ? 0 : 1;
  }};
}

}  // namespace rlock::cli
