#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "inspect/scan_stream.hpp"
#include "util/spool.hpp"

namespace rlock::inspect {

// `--format prometheus`: the text exposition format 0.0.4, for node_exporter's textfile
// collector. The format wants all samples of a metric family in one block, while objects
// of every type come mixed in SCAN order: each family's samples are spooled as they come
// (util/spool.hpp: 64 KiB in memory per family, the rest in a temporary file), and
// finish() writes the families one after the other. So one SCAN pass serves every family
// (each sample of an object comes from the same read), and memory stays bounded whatever
// the number of objects; the disk holds what the output will.
class PrometheusWriter {
 public:
  PrometheusWriter();
  // Spools the samples of a batch's objects.
  void batch(const std::vector<Shown>& shown);
  // Hands the whole exposition to `out`, family by family (HELP, TYPE, samples), in
  // pieces. A family with no sample is left out.
  void finish(const std::function<void(const std::string&)>& out);

 private:
  void sample(size_t family, const std::string& labels, const std::string& value);
  void lock(const Json& j, const std::string& name);
  void sem(const Json& j, const std::string& name);
  void queue(const Json& j, const std::string& name);
  void limiter(const Json& j, const std::string& name);
  void runs(const Json& j, const std::string& name);

  std::vector<Spool> spools_;  // one per family, in the order of the family table
};

// A label value as the format writes it between double quotes: backslash, double quote and
// newline escaped (\\, \", \n); bytes that are not UTF-8 (another program's key) become
// U+FFFD, as in the JSON output, since the format's text is UTF-8.
std::string prometheus_label_value(std::string_view raw);

// Milliseconds as seconds in the format's float syntax: "29.5", "0.001", "12".
std::string prometheus_seconds(long long ms);

}  // namespace rlock::inspect
